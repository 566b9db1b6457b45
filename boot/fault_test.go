package main

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ether9/ether9/boot/qemu"
)

var (
	linePCIe1000e = regexp.MustCompile(`pci ([0-9a-f]{2}:[0-9a-f]{2}\.[0-7]) 8086:10d3 e1000e`)
	lineArmed     = regexp.MustCompile(`ether0: debug: rx descriptor (\d+) armed with unmapped iova (0x[0-9a-f]+)`)
)

// TestInjectedDMAFaultE1000e boots the image with QEMU's e1000e behind
// intel-iommu and, through the debug ctl, points one RX descriptor at an
// IOVA the NIC's domain leaves unmapped. QEMU refuses the write, records
// the fault and still completes the descriptor. The fault must be printed
// on the console with the NIC's source id and that IOVA, counted on the
// status page, and the link must keep carrying data intact both ways.
func TestInjectedDMAFaultE1000e(t *testing.T) {
	needMachine(t, "e1000e")
	if !isMain(t, "./boot/init") {
		t.Skip("skipping: ./boot/init is not a command yet")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var log syncBuffer
	o := testOptions("e1000e", "./boot/init")
	var err error
	if o.port, err = freePort(); err != nil {
		t.Fatal(err)
	}
	p, err := assemble(ctx, o, &log)
	if err != nil {
		t.Fatal(err)
	}
	defer p.remove()
	c, err := qemuConfig(o, p)
	if err != nil {
		t.Fatal(err)
	}
	vm, err := qemu.Start(c, &log)
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Stop()
	con := vm.Console
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf(format+"\nlast console lines:\n%s", append(args, con.Tail(25))...)
	}
	pciLine, err := con.WaitMatch(ctx, linePCIe1000e)
	if err != nil {
		fail("%v", err)
	}
	nicPCI := linePCIe1000e.FindStringSubmatch(pciLine.Text)[1]
	listening, err := con.WaitMatch(ctx, lineHTTP.re)
	if err != nil {
		fail("%v", err)
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", o.port)
	client := &http.Client{Timeout: time.Minute}
	page, err := getStatus(ctx, client, base)
	if err != nil {
		fail("%v", err)
	}
	if err := checkStatus(page); err != nil {
		fail("before the injection: %v", err)
	}

	for cmd, code := range map[string]int{"ether0 debug frob": 400, "ether0 debug inject-unmapped-rx": 200} {
		if got, err := postCtl(ctx, client, base, cmd); err != nil || got != code {
			fail("ctl %q: status %d, %v; want %d", cmd, got, err, code)
		}
	}
	injected := time.Now()
	// The next refill arms the hole; 1 MiB up is several ring-fulls of
	// frames, so the device reaches it mid-transfer and TCP must recover.
	up, err := push(ctx, client, base, 1<<20)
	if err != nil {
		fail("upload through the fault: %v", err)
	}
	armed, err := con.WaitMatch(ctx, lineArmed)
	if err != nil {
		fail("%v", err)
	}
	hole := lineArmed.FindStringSubmatch(armed.Text)[2]
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	seen, err := con.WaitFor(wctx, "iommu: fault "+nicPCI+" write "+hole+" ")
	wcancel()
	if err != nil {
		fail("%v", err)
	}
	dropLine, err := con.WaitFor(ctx, "ether0: rx: dma fault: dropped ")
	if err != nil {
		fail("%v", err)
	}

	down, err := pull(ctx, client, base, 1<<20)
	if err != nil {
		fail("download after the fault: %v", err)
	}
	page, err = getStatus(ctx, client, base)
	if err != nil {
		fail("%v", err)
	}
	if !hasLine(page, "iommu translation on") {
		fail("translation off after the fault:\n%s", page)
	}
	if f := faultLine(page); f == "" || f == "iommu faults 0" {
		fail("status page fault count %q:\n%s", f, page)
	}
	if !hasLine(page, "iommu fault "+nicPCI+" write "+hole+" ") {
		fail("status page does not list the fault at %s:\n%s", hole, page)
	}
	if !hasLine(page, "ether0 rx_drop_dma ") || hasLine(page, "ether0 rx_drop_dma 0") {
		fail("status page: no RX frame dropped for the fault:\n%s", page)
	}
	t.Logf("after QEMU start: http listening %.2fs, descriptor armed %.2fs, fault printed %.2fs; ctl to checks done %.2fs",
		listening.At.Seconds(), armed.At.Seconds(), seen.At.Seconds(), time.Since(injected).Seconds())
	t.Logf("console: %s | %s | %s", armed.Text, seen.Text, dropLine.Text)
	t.Logf("through the fault: 1 MiB up %.1f Mbit/s, then 1 MiB down %.1f Mbit/s", up.mbitps(), down.mbitps())
}

func postCtl(ctx context.Context, client *http.Client, base, cmd string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", base+"/ctl", strings.NewReader(cmd))
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}
