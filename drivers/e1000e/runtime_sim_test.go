package e1000e_test

import (
	"bytes"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ether9/ether9/drivers/internal/nictest"
	"github.com/ether9/ether9/drivers/internal/testhost"
	"github.com/ether9/ether9/drivers/nic"
	"gvisor.dev/gvisor/pkg/buffer"
)

// deliver sends f from the far end and returns how many frames the driver
// received, checking each against f.
func (mc *machine) deliver(t *testing.T, f []byte) int {
	t.Helper()
	mc.wire.B().Send(f)
	got := mc.poll()
	for _, p := range got {
		if !bytes.Equal(p.Data.Flatten(), f) {
			t.Errorf("received %d bytes that differ from the %d sent", p.Data.Size(), len(f))
		}
		p.Data.Release()
	}
	return len(got)
}

// transmit sends one frame and checks it reaches the far end intact.
func (mc *machine) transmit(t *testing.T, n int, seed byte) {
	t.Helper()
	f := mc.frame(n, seed)
	copy(f, []byte{0x02, 0, 0, 0, 0, 9})
	mac := mc.NIC.MAC()
	copy(f[6:], mac[:])
	mc.send(t, &nic.TxPacket{Data: buffer.MakeWithData(f)})
	if seen := mc.peer.Frames(); len(seen) != 1 || !bytes.Equal(seen[0], f) {
		t.Fatalf("transmit of %d bytes: %d frames on the wire", n, len(seen))
	}
}

// A unicast frame to another station passes only in promiscuous mode;
// allmulti stays what it was told apart from promiscuous.
func TestSimPromiscuous(t *testing.T) {
	mc := newMachine(t, rigOpt{})
	defer mc.close(t)
	stranger := mc.frame(100, 1)
	copy(stranger, []byte{0x02, 0x11, 0x22, 0x33, 0x44, 0x55})
	group := mc.frame(100, 2)
	copy(group, []byte{0x01, 0x00, 0x5e, 0x7f, 0x00, 0x01})
	mine := mc.frame(100, 3)
	want := func(step string, f []byte, n int) {
		t.Helper()
		if got := mc.deliver(t, f); got != n {
			t.Errorf("%s: %d frames, want %d", step, got, n)
		}
	}
	want("default, another station", stranger, 0)
	want("default, a group not joined", group, 0)
	want("default, our address", mine, 1)
	if err := mc.NIC.Ctl("promiscuous perhaps"); err == nil {
		t.Error("promiscuous perhaps accepted")
	}
	want("after a bad command", stranger, 0)

	if err := mc.NIC.Ctl("promiscuous on"); err != nil {
		t.Fatal(err)
	}
	want("promiscuous, another station", stranger, 1)
	want("promiscuous, a group not joined", group, 1)
	want("promiscuous, our address", mine, 1)
	if err := mc.NIC.SetMTU(1500); err != nil { // rewrites RCTL
		t.Fatal(err)
	}
	want("promiscuous after an MTU change", stranger, 1)

	if err := mc.NIC.Ctl("allmulti on"); err != nil {
		t.Fatal(err)
	}
	if err := mc.NIC.Ctl("promiscuous off"); err != nil {
		t.Fatal(err)
	}
	want("allmulti, another station", stranger, 0)
	want("allmulti, a group", group, 1)
	if err := mc.NIC.Ctl("allmulti off"); err != nil {
		t.Fatal(err)
	}
	want("filters back, a group", group, 0)
	want("filters back, our address", mine, 1)
}

// Resizing the rings while traffic runs: traffic resumes on the new
// lengths (more frames than the old ring held, so the device wraps the new
// ring), the driver's counters keep counting, and once back at the probe
// lengths the IOMMU maps exactly the pages it mapped before.
func TestSimRingResize(t *testing.T) {
	for _, tx := range testhost.TxModes {
		for _, nc := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/noncoherent=%v", tx.Name, nc), func(t *testing.T) { testRingResize(t, rigOpt{nonCoherent: nc, tx: tx}) })
		}
	}
}

func testRingResize(t *testing.T, o rigOpt) {
	mc := newMachine(t, o)
	defer mc.close(t)
	traffic := func(step string, frames int) {
		t.Helper()
		for i := range frames {
			n := 60 + i%1400
			if got := mc.deliver(t, mc.frame(n, byte(i))); got != 1 {
				t.Fatalf("%s: frame %d: %d received", step, i, got)
			}
			mc.transmit(t, 60+i%1000, byte(i))
		}
	}
	traffic("before", 20)
	// Every slot now holds a mapped buffer (the frames were
	// copied): the steady state to come back to.
	base := mc.IOMMUStats()
	// A frame the driver has not polled yet when the ring goes.
	mc.wire.B().Send(mc.frame(200, 99))
	received := mc.Stat(t, "rx_frames")
	for _, bad := range []string{"rxring 250", "rxring 32", "rxring 8200", "txring x", "txring 12"} {
		if err := mc.NIC.Ctl(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if err := mc.NIC.Ctl("rxring 512"); err != nil {
		t.Fatal(err)
	}
	if err := mc.NIC.Ctl("txring 64"); err != nil {
		t.Fatal(err)
	}
	if got := mc.Stat(t, "rx_frames"); got < received {
		t.Errorf("rx_frames went back from %d to %d", received, got)
	}
	if got := mc.Stat(t, "rx_drop_reconfig"); got != 1 {
		t.Errorf("rx_drop_reconfig %d, want the 1 frame left unpolled", got)
	}
	traffic("512 rx, 64 tx", 600)
	if err := mc.NIC.Ctl("rxring 128"); err != nil {
		t.Fatal(err)
	}
	if err := mc.NIC.Ctl("txring 4096"); err != nil {
		t.Fatal(err)
	}
	traffic("128 rx, 4096 tx", 300)
	for _, cmd := range []string{"rxring 256", "txring 256"} {
		if err := mc.NIC.Ctl(cmd); err != nil {
			t.Fatal(err)
		}
	}
	traffic("256 rx, 256 tx", 10)
	if got := mc.Stat(t, "rx_frames"); got < received+910 {
		t.Errorf("rx_frames %d, want at least %d", got, received+910)
	}
	now := mc.IOMMUStats()
	if now.MappedPages != base.MappedPages || now.IOVAInUse != base.IOVAInUse {
		t.Errorf("back at the probe lengths: %d pages mapped, %d IOVA bytes; before %d, %d", now.MappedPages, now.IOVAInUse, base.MappedPages, base.IOVAInUse)
	}
	if f := mc.Unit.Faults(); len(f) != 0 {
		t.Errorf("VT-d faults: %v", f)
	}
}

// A reset at run time: the model sees CTRL.RST, the link comes back, and
// everything the driver was told still holds: MTU (a long frame passes),
// promiscuous, the multicast groups, copybreak and the TSO setting.
func TestSimReset(t *testing.T) {
	mc := newMachine(t, rigOpt{})
	defer mc.close(t)
	for _, cmd := range []string{"mtu 2000", "copybreak 2048", "tso off", "addmulti 01:00:5e:00:00:fb", "promiscuous on"} {
		if err := mc.NIC.Ctl(cmd); err != nil {
			t.Fatalf("%q: %v", cmd, err)
		}
	}
	if got := mc.deliver(t, mc.frame(500, 1)); got != 1 {
		t.Fatalf("before reset: %d frames", got)
	}
	gprc := func() uint64 {
		for _, s := range mc.NIC.(nic.DeviceStater).DeviceStats() {
			if s.Name == "good_packets_rx" {
				return s.Value
			}
		}
		t.Fatal("no good_packets_rx in ifstats")
		return 0
	}
	countedBefore := gprc()
	resets := mc.Model.Counters().Resets
	mc.wire.B().Send(mc.frame(300, 9)) // still unpolled at the reset
	if err := mc.NIC.Ctl("reset"); err != nil {
		t.Fatal(err)
	}
	if got := mc.Stat(t, "rx_drop_reconfig"); got != 1 {
		t.Errorf("rx_drop_reconfig %d, want the 1 frame left unpolled", got)
	}
	if got := mc.Model.Counters().Resets; got != resets+1 {
		t.Fatalf("model saw %d resets, want %d", got-resets, 1)
	}
	mc.poll() // the LSC the reset raised
	if l := mc.NIC.Link(); !l.Up || l.SpeedMbps != 1000 {
		t.Errorf("link after reset %+v", l)
	}
	if mc.NIC.MTU() != 2000 || mc.NIC.Features().TSOv4 || mc.Stat(t, "copybreak") != 2048 {
		t.Errorf("settings lost: mtu %d features %+v copybreak %d", mc.NIC.MTU(), mc.NIC.Features(), mc.Stat(t, "copybreak"))
	}
	if got := gprc(); got < countedBefore {
		t.Errorf("good_packets_rx went back from %d to %d across the reset", countedBefore, got)
	}
	stranger := mc.frame(100, 2)
	copy(stranger, []byte{0x02, 0x11, 0x22, 0x33, 0x44, 0x55})
	group := mc.frame(100, 3)
	copy(group, []byte{0x01, 0x00, 0x5e, 0x00, 0x00, 0xfb})
	copies := mc.Stat(t, "rx_copybreak")
	for _, f := range [][]byte{mc.frame(2000+14, 4), stranger, group, mc.frame(60, 5)} {
		if got := mc.deliver(t, f); got != 1 {
			t.Errorf("after reset: %d-byte frame to %x: %d received", len(f), f[:6], got)
		}
	}
	if got := mc.Stat(t, "rx_copybreak") - copies; got != 4 {
		t.Errorf("%d of 4 frames copied under copybreak 2048", got)
	}
	mc.transmit(t, 1000, 6)
	if err := mc.NIC.Ctl("promiscuous off"); err != nil {
		t.Fatal(err)
	}
	if got := mc.deliver(t, stranger); got != 0 {
		t.Error("another station's frame passed with promiscuous off")
	}
	if got := mc.deliver(t, group); got != 1 {
		t.Error("the joined group did not survive the reset in the MTA")
	}
	if f := mc.Unit.Faults(); len(f) != 0 {
		t.Errorf("VT-d faults: %v", f)
	}
}

// Ring resizes, resets and filter changes while the RX, TX and statistics
// paths run in their own goroutines, as the link endpoint and the control
// files do: under -race this proves the ring swap is synchronised, and at
// the end traffic still flows and nothing stays mapped or pinned.
func TestSimControlUnderTraffic(t *testing.T) {
	mc := newMachine(t, rigOpt{})
	var onWire atomic.Uint64
	mc.wire.B().Receive(func([]byte) { onWire.Add(1) })
	var stop atomic.Bool
	var received atomic.Uint64
	var wg sync.WaitGroup
	wg.Add(3)
	// The far end sends from the polling goroutine: device and driver
	// share descriptor memory with no lock, as on hardware, so only the
	// driver's own state is left to race. A frame's DMA is over before a
	// command's settle time is (wireMu): the model's DMA takes no
	// virtual time, on hardware it takes microseconds.
	var wireMu sync.Mutex
	go func() {
		defer wg.Done()
		for k := 0; !stop.Load(); k++ {
			wireMu.Lock()
			mc.wire.B().Send(mc.frame(60+k%1400, byte(k)))
			wireMu.Unlock()
			n := nictest.Receive(mc.q, 64, func(p *nic.RxPacket) { p.Data.Release() })
			received.Add(uint64(n))
			runtime.Gosched()
		}
	}()
	go func() {
		defer wg.Done()
		for k := 0; !stop.Load(); k++ {
			f := mc.frame(100+k%1300, byte(k))
			copy(f, []byte{0x02, 0, 0, 0, 0, 9})
			p := &nic.TxPacket{Data: buffer.MakeWithData(f)}
			if n, _ := mc.q.Transmit([]*nic.TxPacket{p}); n != 1 {
				p.Data.Release()
			}
			mc.q.Reclaim()
			runtime.Gosched()
		}
	}()
	go func() {
		defer wg.Done()
		for !stop.Load() {
			_ = mc.NIC.Stats()
			_ = mc.NIC.(nic.DeviceStater).DeviceStats()
			_ = mc.NIC.Link()
			runtime.Gosched()
		}
	}()
	cmds := []string{"rxring 128", "txring 64", "promiscuous on", "reset", "rxring 1024", "promiscuous off", "txring 512", "reset", "rxring 256", "txring 256"}
	for k := range 40 {
		runtime.Gosched()
		wireMu.Lock()
		err := mc.NIC.Ctl(cmds[k%len(cmds)])
		wireMu.Unlock()
		if err != nil {
			t.Errorf("%q: %v", cmds[k%len(cmds)], err)
		}
	}
	stop.Store(true)
	wg.Wait()
	if received.Load() == 0 || onWire.Load() == 0 {
		t.Errorf("no traffic while under control: %d received, %d sent", received.Load(), onWire.Load())
	}
	mc.q.Reclaim()
	mc.poll()
	want := mc.frame(1514, 7)
	if got := mc.deliver(t, want); got != 1 {
		t.Errorf("after the commands: %d frames received", got)
	}
	if f := mc.Unit.Faults(); len(f) != 0 {
		t.Errorf("VT-d faults: %v", f)
	}
	mc.close(t)
}
