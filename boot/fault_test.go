package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ether9/ether9/boot/qemu"
	"github.com/ether9/ether9/kernel/sim/wire"
)

var (
	linePCIe1000e = regexp.MustCompile(`pci ([0-9a-f]{2}:[0-9a-f]{2}\.[0-7]) 8086:10d3 e1000e`)
	lineArmed     = regexp.MustCompile(`ether0: debug: rx descriptor (\d+) armed with unmapped iova (0x[0-9a-f]+)`)
	lineArmedTx   = regexp.MustCompile(`ether0: debug: tx descriptor (\d+) armed with unmapped iova (0x[0-9a-f]+)`)
)

// faultVM is the image running under QEMU with an e1000e behind
// intel-iommu, its status page checked clean before any injection.
type faultVM struct {
	ctx       context.Context
	con       *qemu.Console
	client    *http.Client
	base      string
	nicPCI    string // the e1000e's address as the console prints it
	listening qemu.Line
	fail      func(format string, args ...any)
}

// bootFaultVM boots the image for a fault-injection test; with pcap set,
// QEMU records the guest's wire there. platform is "linux" or "metal".
func bootFaultVM(t *testing.T, pcap, platform string) *faultVM {
	t.Helper()
	needMachine(t, "e1000e")
	if platform == "metal" {
		needShimTools(t)
	}
	if !isMain(t, "./boot/init") {
		t.Skip("skipping: ./boot/init is not a command yet")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	var log syncBuffer
	o := testOptions("e1000e", "./boot/init")
	o.pcap = pcap
	o.platform = platform
	o.port = 0 // a free one
	o, err := withToken(o)
	if err != nil {
		t.Fatal(err)
	}
	vm, c := startVM(t, ctx, o, &log)
	f := &faultVM{ctx: ctx, con: vm.Console, client: &http.Client{Timeout: time.Minute, Transport: bearer{token: o.token}}, base: fmt.Sprintf("http://127.0.0.1:%d", c.Forward[0].Host)}
	f.fail = func(format string, args ...any) {
		t.Helper()
		t.Fatalf(format+"\nlast console lines:\n%s", append(args, f.con.Tail(25))...)
	}
	pciLine, err := f.con.WaitMatch(ctx, linePCIe1000e)
	if err != nil {
		f.fail("%v", err)
	}
	f.nicPCI = linePCIe1000e.FindStringSubmatch(pciLine.Text)[1]
	if f.listening, err = f.con.WaitMatch(ctx, lineHTTP.re); err != nil {
		f.fail("%v", err)
	}
	page, err := getStatus(ctx, f.client, f.base)
	if err != nil {
		f.fail("%v", err)
	}
	if err := checkStatus(page); err != nil {
		f.fail("before the injection: %v", err)
	}
	return f
}

// awaitFault waits for the console line that arms an injection and for
// the unit's fault record of the device's access (read or write) at the
// hole it names.
func (f *faultVM) awaitFault(armedLine *regexp.Regexp, access string) (armed, seen qemu.Line, hole string) {
	armed, err := f.con.WaitMatch(f.ctx, armedLine)
	if err != nil {
		f.fail("%v", err)
	}
	hole = armedLine.FindStringSubmatch(armed.Text)[2]
	wctx, cancel := context.WithTimeout(f.ctx, 10*time.Second)
	defer cancel()
	if seen, err = f.con.WaitFor(wctx, "iommu: fault "+f.nicPCI+" "+access+" "+hole+" "); err != nil {
		f.fail("%v", err)
	}
	return armed, seen, hole
}

// pullStatus moves 1 MiB down (checked end to end) and returns the status
// page, which must still say translation is on.
func (f *faultVM) pullStatus() (down transfer, page string) {
	down, err := pull(f.ctx, f.client, f.base, 1<<20)
	if err != nil {
		f.fail("download after the fault: %v", err)
	}
	if page, err = getStatus(f.ctx, f.client, f.base); err != nil {
		f.fail("%v", err)
	}
	if !hasLine(page, "iommu translation on") {
		f.fail("translation off after the fault:\n%s", page)
	}
	return down, page
}

// ctl posts each command and wants its status code.
func (f *faultVM) ctl(cmds map[string]int) {
	for cmd, code := range cmds {
		if got, _, err := postCtl(f.ctx, f.client, f.base, cmd); err != nil || got != code {
			f.fail("ctl %q: status %d, %v; want %d", cmd, got, err, code)
		}
	}
}

// TestInjectedDMAFaultE1000e boots the image with QEMU's e1000e behind
// intel-iommu and, through the debug ctl, points one RX descriptor at an
// IOVA the NIC's domain leaves unmapped. QEMU refuses the write, records
// the fault and still completes the descriptor. The fault must be printed
// on the console with the NIC's source id and that IOVA, counted on the
// status page, and the link must keep carrying data intact both ways.
func TestInjectedDMAFaultE1000e(t *testing.T) {
	f := bootFaultVM(t, "", "linux")
	ctx, con, fail := f.ctx, f.con, f.fail
	f.ctl(map[string]int{"ether0 debug frob": 400, "ether0 debug inject-unmapped-rx": 200})
	injected := time.Now()
	// The next refill arms the hole; 1 MiB up is several ring-fulls of
	// frames, so the device reaches it mid-transfer and TCP must recover.
	up, err := push(ctx, f.client, f.base, 1<<20)
	if err != nil {
		fail("upload through the fault: %v", err)
	}
	armed, seen, hole := f.awaitFault(lineArmed, "write")
	dropLine, err := con.WaitFor(ctx, "ether0: rx: dma fault: dropped ")
	if err != nil {
		fail("%v", err)
	}
	down, page := f.pullStatus()
	if f := faultLine(page); f == "" || f == "iommu faults 0" {
		fail("status page fault count %q:\n%s", f, page)
	}
	if !hasLine(page, "iommu fault "+f.nicPCI+" write "+hole+" ") {
		fail("status page does not list the fault at %s:\n%s", hole, page)
	}
	if !hasLine(page, "ether0 rx_drop_dma ") || hasLine(page, "ether0 rx_drop_dma 0") {
		fail("status page: no RX frame dropped for the fault:\n%s", page)
	}
	t.Logf("after QEMU start: http listening %.2fs, descriptor armed %.2fs, fault printed %.2fs; ctl to checks done %.2fs",
		f.listening.At.Seconds(), armed.At.Seconds(), seen.At.Seconds(), time.Since(injected).Seconds())
	t.Logf("console: %s | %s | %s", armed.Text, seen.Text, dropLine.Text)
	t.Logf("through the fault: 1 MiB up %.1f Mbit/s, then 1 MiB down %.1f Mbit/s", up.mbitps(), down.mbitps())
}

// TestInjectedTxDMAFaultE1000e points the first data descriptor of the
// next packet the guest sends (the answer to the ctl itself) at an
// unmapped IOVA. QEMU's read of it is refused and recorded; QEMU still
// sets DD and puts a frame of zeros on the wire in the packet's place:
// the map of the refused IOVA falls back to a bounce buffer read from the
// unassigned region. The fault must be printed with the NIC's source id,
// read and that IOVA; the driver counts it once, sends its copy of the
// packet again, and 1 MiB each way matches its SHA-256 afterwards.
func TestInjectedTxDMAFaultE1000e(t *testing.T) {
	capture := filepath.Join(t.TempDir(), "wire.pcap")
	f := bootFaultVM(t, capture, "linux")
	ctx, con, fail := f.ctx, f.con, f.fail
	f.ctl(map[string]int{"ether0 debug inject-unmapped-tx": 200})
	injected := time.Now()
	armed, seen, hole := f.awaitFault(lineArmedTx, "read")
	again, err := con.WaitFor(ctx, "ether0: tx: dma fault on descriptor ")
	if err != nil {
		fail("%v", err)
	}
	up, err := push(ctx, f.client, f.base, 1<<20)
	if err != nil {
		fail("upload after the fault: %v", err)
	}
	down, page := f.pullStatus()
	lines := "\n" + page + "\n"
	for _, want := range []string{"iommu faults 1", "ether0 tx_dma_faults 1", "ether0 tx_dma_resent 1", "ether0 rx_drop_dma 0"} {
		if !strings.Contains(lines, "\n"+want+"\n") {
			fail("status page lacks the line %q:\n%s", want, page)
		}
	}
	if !hasLine(page, "iommu fault "+f.nicPCI+" read "+hole+" ") {
		fail("status page does not list the read fault at %s:\n%s", hole, page)
	}
	printed := 0
	for _, l := range con.Lines() {
		if strings.Contains(l.Text, "iommu: fault ") {
			printed++
		}
	}
	if printed != 1 {
		fail("fault printed %d times", printed)
	}
	zero, copied := zeroFrame(t, capture)
	if zero < 0 || !copied {
		fail("capture: QEMU's frame of zeros for the refused read: %d bytes (-1: none or several), the guest's copy after it: %v", zero, copied)
	}
	t.Logf("QEMU's frame for the refused read: %d bytes of zeros; the copy followed", zero)
	t.Logf("after QEMU start: descriptor armed %.2fs, fault printed %.2fs, packet sent again %.2fs; ctl to checks done %.2fs",
		armed.At.Seconds(), seen.At.Seconds(), again.At.Seconds(), time.Since(injected).Seconds())
	t.Logf("console: %s | %s | %s", armed.Text, seen.Text, again.Text)
	t.Logf("after the fault: 1 MiB up %.1f Mbit/s, 1 MiB down %.1f Mbit/s", up.mbitps(), down.mbitps())
}

// zeroFrame finds the one frame in the capture made of zeros alone and
// returns its length (-1: none, or several), and whether a frame of that
// length from the guest's address follows it: the driver's copy.
func zeroFrame(t *testing.T, capture string) (int, bool) {
	t.Helper()
	b, err := os.ReadFile(capture)
	if err != nil {
		t.Fatal(err)
	}
	_, pkts, err := wire.ReadPcap(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", capture, err)
	}
	at := -1
	for i, p := range pkts {
		if len(p.Data) > 0 && !slices.ContainsFunc(p.Data, func(c byte) bool { return c != 0 }) {
			if at >= 0 {
				return -1, false
			}
			at = i
		}
	}
	if at < 0 {
		return -1, false
	}
	guest := []byte{0x52, 0x54, 0x00, 0x12, 0x34, 0x56} // QEMU's default e1000e address
	for _, p := range pkts[at+1:] {
		if p.OrigLen == pkts[at].OrigLen && len(p.Data) >= 12 && bytes.Equal(p.Data[6:12], guest) {
			return pkts[at].OrigLen, true
		}
	}
	return pkts[at].OrigLen, false
}

// TestFaultEventMetal: on the ring-0 platform the VT-d unit announces a
// fault with its fault event, an MSI to a vector of the shim, so the
// fault is reported at once and not at the watcher's next look, up to
// the idle second later. The injected TX fault must be printed, and
// /dev/iommu/stats must count the event.
func TestFaultEventMetal(t *testing.T) {
	f := bootFaultVM(t, "", "metal")
	wctx, cancel := context.WithTimeout(f.ctx, 10*time.Second)
	_, err := f.con.WaitFor(wctx, ": fault events on MSI ")
	cancel()
	if err != nil {
		f.fail("no fault events: %v", err)
	}
	f.ctl(map[string]int{"ether0 debug inject-unmapped-tx": 200})
	armed, seen, _ := f.awaitFault(lineArmedTx, "read")
	req, err := http.NewRequestWithContext(f.ctx, "GET", f.base+"/ns/dev/iommu/stats", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := f.client.Do(req)
	if err != nil {
		f.fail("/dev/iommu/stats: %v", err)
	}
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	resp.Body.Close()
	stats := "\n" + b.String()
	if !strings.Contains(stats, "\nfaults 1\n") || strings.Contains(stats, "\nfault-events 0\n") || !strings.Contains(stats, "\nfault-events ") {
		f.fail("/dev/iommu/stats: want one fault and its event:\n%s", b.String())
	}
	t.Logf("fault printed %v after its descriptor was armed", (seen.At - armed.At).Round(time.Millisecond))
}
