package e1000e

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/ether9/ether9/drivers/internal/fakedev"
	"github.com/ether9/ether9/drivers/internal/nictest"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/nicstat"
	"github.com/ether9/ether9/kernel"
	"gvisor.dev/gvisor/pkg/buffer"
)

func TestPromiscuousRCTL(t *testing.T) {
	r := newRig(t, 0x10D3)
	d := r.d
	filter := func() uint32 { return r.regs.Get(RCTL) & (RCTL_UPE | RCTL_MPE | RCTL_EN) }
	for _, bad := range []string{"promiscuous", "promiscuous maybe", "promiscuous on off", "promiscuous 1"} {
		if err := d.Ctl(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if got := filter(); got != RCTL_EN {
		t.Fatalf("bad commands changed RCTL filter bits to %#x", got)
	}
	steps := []struct {
		cmd  string
		want uint32
	}{
		{"promiscuous on", RCTL_EN | RCTL_UPE | RCTL_MPE},
		{"mtu 2000", RCTL_EN | RCTL_UPE | RCTL_MPE}, // an MTU change keeps the filter
		{"allmulti on", RCTL_EN | RCTL_UPE | RCTL_MPE},
		{"promiscuous off", RCTL_EN | RCTL_MPE}, // allmulti stands on its own
		{"allmulti off", RCTL_EN},
		{"promiscuous on", RCTL_EN | RCTL_UPE | RCTL_MPE},
		{"allmulti off", RCTL_EN | RCTL_UPE | RCTL_MPE}, // promiscuous still passes multicast
		{"promiscuous off", RCTL_EN},
	}
	for _, s := range steps {
		if err := d.Ctl(s.cmd); err != nil {
			t.Fatalf("%q: %v", s.cmd, err)
		}
		if got := filter(); got != s.want {
			t.Errorf("after %q: RCTL EN/UPE/MPE %#x, want %#x", s.cmd, got, s.want)
		}
	}
	r.Close(t)
}

// failingAlloc refuses coherent allocations: a ring that cannot be built.
type failingAlloc struct{ *fakedev.DMA }

func (failingAlloc) AllocCoherent(int) (kernel.Coherent, error) {
	return kernel.Coherent{}, errors.New("out of coherent memory")
}

func TestRingResize(t *testing.T) {
	r := newRig(t, 0x10D3)
	d := r.d
	for _, bad := range []string{"rxring", "rxring x", "rxring 100", "rxring 0", "rxring 56", "rxring 8192", "rxring -8", "txring 33", "txring 4104", "txring 1 2"} {
		if err := d.Ctl(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if r.regs.Get(RDLEN) != rxDescs*descSize || r.regs.Get(TDLEN) != txDescs*descSize || d.q.rx.Descs.Len() != rxDescs || d.q.tx.Descs.Len() != txDescs {
		t.Fatalf("bad commands changed the rings: RDLEN %d TDLEN %d", r.regs.Get(RDLEN), r.regs.Get(TDLEN))
	}

	// A ring that cannot be allocated leaves the old one running.
	d.dma = failingAlloc{r.DMA}
	if err := d.Ctl("rxring 512"); err == nil {
		t.Error("rxring with no memory succeeded")
	}
	if err := d.Ctl("txring 512"); err == nil {
		t.Error("txring with no memory succeeded")
	}
	d.dma = r.DMA
	if r.regs.Get(RDLEN) != rxDescs*descSize || r.regs.Get(RCTL)&RCTL_EN == 0 || r.regs.Get(TCTL)&TCTL_EN == 0 || r.DMA.Live() != rxDescs-1 {
		t.Fatalf("failed resize changed the device: RDLEN %d RCTL %#x TCTL %#x live %d", r.regs.Get(RDLEN), r.regs.Get(RCTL), r.regs.Get(TCTL), r.DMA.Live())
	}

	// One frame received on the old ring: its counter must survive.
	r.complete(t, 0, bytes.Repeat([]byte{7}, 60), RXD_STAT_DD|RXD_STAT_EOP, 60)
	if got := r.poll(); len(got) != 1 {
		t.Fatalf("%d frames", len(got))
	} else {
		got[0].Data.Release()
	}
	// A mapped frame in flight on the old TX ring: the device never
	// finishes it, so the resize drops it and must unmap it.
	if n, err := d.q.Transmit([]*nic.TxPacket{{Data: buffer.MakeWithData(bytes.Repeat([]byte{9}, 1000))}}); n != 1 || err != nil {
		t.Fatalf("transmit: %d %v", n, err)
	}
	d.Ctl("promiscuous on")
	// Written back but not polled when the ring goes: counted as lost.
	r.complete(t, d.q.rx.Clean(), bytes.Repeat([]byte{8}, 60), RXD_STAT_DD|RXD_STAT_EOP, 60)
	packets := func() uint64 {
		for _, s := range d.Stats() {
			if s.Name == "rx_frames" {
				return s.Value
			}
		}
		t.Fatal("no rx_frames")
		return 0
	}
	before := packets()

	if err := d.Ctl("rxring 512"); err != nil {
		t.Fatal(err)
	}
	if err := d.Ctl("txring 64"); err != nil {
		t.Fatal(err)
	}
	if got := r.regs.Get(RDLEN); got != 512*descSize || r.regs.Get(RDT) != 511 || r.regs.Get(RDH) != 0 {
		t.Errorf("RDLEN %d RDH %d RDT %d", got, r.regs.Get(RDH), r.regs.Get(RDT))
	}
	if got := r.regs.Get(TDLEN); got != 64*descSize || r.regs.Get(TDT) != 0 || r.regs.Get(TDH) != 0 {
		t.Errorf("TDLEN %d TDH %d TDT %d", got, r.regs.Get(TDH), r.regs.Get(TDT))
	}
	if rctl := r.regs.Get(RCTL); rctl&(RCTL_EN|RCTL_UPE|RCTL_MPE) != RCTL_EN|RCTL_UPE|RCTL_MPE || r.regs.Get(TCTL)&TCTL_EN == 0 {
		t.Errorf("after resize RCTL %#x TCTL %#x", rctl, r.regs.Get(TCTL))
	}
	if got := r.DMA.Live(); got != 511 {
		t.Errorf("%d streaming mappings, want 511 (the new RX buffers only)", got)
	}
	if got := packets(); got != before {
		t.Errorf("rx_frames %d after resize, was %d", got, before)
	}
	if got := d.q.rxReconfigDrops.Load(); got != 1 {
		t.Errorf("rx_drop_reconfig %d, want 1", got)
	}
	// The new ring receives, at its last descriptor too.
	for i := range 511 {
		r.complete(t, i, bytes.Repeat([]byte{byte(i)}, 64), RXD_STAT_DD|RXD_STAT_EOP, 64)
	}
	got := r.poll()
	for len(got) < 511 {
		more := r.poll()
		if len(more) == 0 {
			break
		}
		got = append(got, more...)
	}
	if len(got) != 511 || got[510].Data.Flatten()[0] != byte(510%256) {
		t.Fatalf("new ring: %d frames", len(got))
	}
	for _, p := range got {
		p.Data.Release()
	}
	if got := packets(); got != before+511 {
		t.Errorf("rx_frames %d, want %d", got, before+511)
	}
	// Back to the old size: the mapping count is as after probe.
	if err := d.Ctl("rxring 256"); err != nil {
		t.Fatal(err)
	}
	if got := r.DMA.Live(); got != rxDescs-1 {
		t.Errorf("%d streaming mappings after returning to %d descriptors", got, rxDescs)
	}
	r.Close(t)
}

func TestResetKeepsSettings(t *testing.T) {
	r := newRig(t, 0x10D3)
	d := r.d
	group := [6]byte{0x01, 0x00, 0x5e, 0x00, 0x00, 0xfb}
	for _, cmd := range []string{"mtu 2000", "copybreak 1024", "copybreak-mode unmap", "tso off", "promiscuous on", "addmulti 01:00:5e:00:00:fb"} {
		if err := d.Ctl(cmd); err != nil {
			t.Fatalf("%q: %v", cmd, err)
		}
	}
	r.regs.Set(nicstat.GPRC, 7) // counted before the reset clears it
	if err := d.Ctl("reset now"); err == nil {
		t.Error("reset with an argument accepted")
	}
	resets := r.regs.Writes(CTRL)
	if err := d.Ctl("reset"); err != nil {
		t.Fatal(err)
	}
	if r.regs.Writes(CTRL) == resets {
		t.Fatal("reset wrote no CTRL")
	}
	if lo, hi := r.regs.Get(RAL0), r.regs.Get(RAH0); lo != 0x12005452 || hi != 0x5634|RAH_AV {
		t.Errorf("RAL/RAH %08x/%08x", lo, hi)
	}
	rctl := r.regs.Get(RCTL)
	if want := uint32(RCTL_EN | RCTL_LPE | RCTL_UPE | RCTL_MPE | RCTL_BAM | RCTL_SECRC); rctl&want != want {
		t.Errorf("RCTL %#x lacks %#x", rctl, want&^rctl)
	}
	h := mtaHash(group)
	if r.regs.Get(MTA+4*(h>>5))&(1<<(h&31)) == 0 {
		t.Error("multicast group lost from the MTA")
	}
	if r.regs.Get(TCTL)&TCTL_EN == 0 || r.regs.Get(RDLEN) != rxDescs*descSize || r.regs.Get(RDT) != rxDescs-1 || r.regs.Get(IMS)&ICR_RXT0 == 0 {
		t.Errorf("not brought up: TCTL %#x RDLEN %d RDT %d IMS %#x", r.regs.Get(TCTL), r.regs.Get(RDLEN), r.regs.Get(RDT), r.regs.Get(IMS))
	}
	if d.MTU() != 2000 || d.q.rx.Copybreak() != 1024 || d.q.rx.Mode().String() != "unmap" || d.Features().TSOv4 || d.TSOReason() == "" {
		t.Errorf("settings lost: mtu %d copybreak %d mode %v features %+v", d.MTU(), d.q.rx.Copybreak(), d.q.rx.Mode(), d.Features())
	}
	if !d.Link().Up {
		t.Error("link down after reset")
	}
	var gprc uint64
	for _, s := range d.DeviceStats() {
		if s.Name == "good_packets_rx" {
			gprc = s.Value
		}
	}
	if gprc != 7 {
		t.Errorf("good_packets_rx %d after reset, want the 7 counted before it", gprc)
	}
	// The ring works after the reset.
	r.complete(t, 0, bytes.Repeat([]byte{3}, 1500), RXD_STAT_DD|RXD_STAT_EOP, 1500)
	if got := r.poll(); len(got) != 1 || got[0].Data.Size() != 1500 {
		t.Fatalf("after reset: %d frames", len(got))
	} else {
		got[0].Data.Release()
	}
	r.Close(t)
	if err := d.Ctl("reset"); err == nil {
		t.Error("reset of a closed device succeeded")
	}
}

func TestDeviceStatsAreRegistersOnly(t *testing.T) {
	r := newRig(t, 0x10D3)
	d := r.d
	r.regs.Set(nicstat.GPRC, 5)
	r.regs.Set(nicstat.CRCERRS, 2)
	dev := d.DeviceStats()
	var names []string
	for _, s := range dev {
		names = append(names, s.Name)
	}
	var want []string
	for _, c := range nicstat.Table() {
		want = append(want, c.Name)
	}
	if !slices.Equal(names, want) {
		t.Errorf("ifstats names %v, want the statistics registers %v", names, want)
	}
	for _, s := range dev {
		switch s.Name {
		case "good_packets_rx":
			if s.Value != 5 {
				t.Errorf("good_packets_rx %d", s.Value)
			}
		case "crc_errors":
			if s.Value != 2 {
				t.Errorf("crc_errors %d", s.Value)
			}
		}
	}
	// Stats still carries them, accumulated, after the driver's own.
	all := d.Stats()
	if tail := all[len(all)-len(dev):]; !slices.Equal(tail, dev) {
		t.Errorf("stats ends %v, want the device registers %v", tail, dev)
	}
	r.Close(t)
}

// A software-GSO packet with more segments than a small ring holds is
// refused with an error; it must not read as back-pressure, which would
// stall the queue on it for ever.
func TestSoftGSOLargerThanRing(t *testing.T) {
	r := newRig(t, 0x10D3)
	d := r.d
	for _, cmd := range []string{"tso off", "txring 64"} {
		if err := d.Ctl(cmd); err != nil {
			t.Fatal(err)
		}
	}
	p, _, _ := nictest.GSOPacket(false, 1000, 60000)
	p.MSS = 536 // 112 segments
	if n, err := d.q.Transmit([]*nic.TxPacket{p}); n != 0 || err == nil || !strings.Contains(err.Error(), "64-descriptor ring") {
		t.Errorf("took %d, err %v", n, err)
	}
	p.Data.Release()
	if d.q.tx.Stats.Full.Load() != 0 || d.q.tx.Stats.Drops.Load() != 1 || d.q.tx.InFlight() != 0 {
		t.Errorf("full %d drops %d in flight %d", d.q.tx.Stats.Full.Load(), d.q.tx.Stats.Drops.Load(), d.q.tx.InFlight())
	}
	// At the full MSS it fits and goes.
	p, _, _ = nictest.GSOPacket(false, 1000, 60000)
	if n, err := d.q.Transmit([]*nic.TxPacket{p}); n != 1 || err != nil {
		t.Errorf("42 segments in a 64-descriptor ring: took %d, err %v", n, err)
	}
	r.Close(t)
}
