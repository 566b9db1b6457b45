package e1000e

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/ether9/ether9/drivers/internal/fakedev"
	"github.com/ether9/ether9/drivers/internal/nictest"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/nicstat"
	"github.com/ether9/ether9/drivers/ring"
	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/pci"
	"gvisor.dev/gvisor/pkg/buffer"
)

func TestProbeBringsUp(t *testing.T) {
	r := newRig(t, 0x10D3)
	d := r.d
	if d.MAC() != testMAC {
		t.Errorf("mac %x", d.MAC())
	}
	if lo, hi := r.regs.Get(RAL0), r.regs.Get(RAH0); lo != 0x12005452 || hi != 0x5634|RAH_AV {
		t.Errorf("RAL/RAH %08x/%08x", lo, hi)
	}
	if r.regs.Get(RCTL)&RCTL_EN == 0 || r.regs.Get(TCTL)&TCTL_EN == 0 || r.regs.Get(RFCTL)&RFCTL_EXSTEN == 0 {
		t.Errorf("RCTL %#x TCTL %#x RFCTL %#x", r.regs.Get(RCTL), r.regs.Get(TCTL), r.regs.Get(RFCTL))
	}
	if got := r.regs.Get(RDT); got != rxDescs-1 || r.regs.Get(RDLEN) != rxDescs*descSize {
		t.Errorf("RDT %d RDLEN %d", got, r.regs.Get(RDLEN))
	}
	if l := d.Link(); l != (nic.Link{Up: true, SpeedMbps: 1000, FullDuplex: true}) {
		t.Errorf("link %+v", l)
	}
	if f := d.Features(); !f.TSOv4 || !f.TSOv6 || !f.TxChecksum || !f.RxChecksum {
		t.Errorf("features %+v", f)
	}
	if r.DMA.Live() != rxDescs-1 {
		t.Errorf("%d buffers mapped, want %d", r.DMA.Live(), rxDescs-1)
	}
	r.Close(t)
}

// A reset waits dmaSettle for DMA in flight only when a receive or
// transmit unit was running before it; one found off, as firmware leaves
// a NIC it never booted from, has nothing to wait for.
func TestResetDrainsOnlyARunningUnit(t *testing.T) {
	r := newRig(t, 0x10D3)
	defer r.Close(t)
	d := r.d
	for _, c := range []struct {
		name       string
		rctl, tctl uint32
		drain      bool
	}{
		{"both off", 0, TCTL_PSP, false},
		{"receiving", RCTL_EN, TCTL_PSP, true},
		{"transmitting", 0, TCTL_EN | TCTL_PSP, true},
	} {
		r.regs.Set(RCTL, c.rctl)
		r.regs.Set(TCTL, c.tctl)
		start := d.clock.Now()
		if err := d.reset(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if took := d.clock.Now() - start; (took >= dmaSettle) != c.drain {
			t.Errorf("%s: reset took %v of clock time, want a drain of %v: %v", c.name, took, dmaSettle, c.drain)
		}
	}
}

func TestProbeRefusesUnknownAndBroken(t *testing.T) {
	regs := newRegFile(status1000, testMAC)
	_, err := Probe(&nic.Device{Name: "ether0", Func: &pci.Function{Vendor: VendorIntel, Device: 0x10C9}, Regs: regs, DMA: fakedev.NewDMA(), Clock: sim.NewClock()})
	if err == nil || !strings.Contains(err.Error(), "8086:10c9") {
		t.Errorf("igb id: %v", err)
	}
	_, err = Probe(&nic.Device{Name: "ether0", Func: &pci.Function{Vendor: VendorIntel, Device: 0x10D3}})
	if err == nil || !strings.Contains(err.Error(), "lacks registers") {
		t.Errorf("device without windows: %v", err)
	}
	regs = newRegFile(0xffffffff, testMAC)
	_, err = Probe(&nic.Device{Name: "ether0", Func: &pci.Function{Vendor: VendorIntel, Device: 0x10D3}, Regs: regs, DMA: fakedev.NewDMA(), Clock: sim.NewClock()})
	if err == nil {
		t.Error("probe of a device reading all ones succeeded")
	}
	regs = newRegFile(status1000, [6]byte{})
	_, err = Probe(&nic.Device{Name: "ether0", Func: &pci.Function{Vendor: VendorIntel, Device: 0x10D3}, Regs: regs, DMA: fakedev.NewDMA(), Clock: sim.NewClock()})
	if err == nil || !strings.Contains(err.Error(), "MAC") {
		t.Errorf("zero MAC: %v", err)
	}
}

func TestPollCopybreak(t *testing.T) {
	for _, cb := range []int{0, 256, 2048} {
		r := newRig(t, 0x10D3)
		if err := r.d.Ctl("copybreak " + itoa(cb)); err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{60, cb - 1, cb, cb + 1, 1514} {
			if n < 60 || n > rxBufSize {
				continue
			}
			i := r.d.q.rx.Clean()
			want := bytes.Repeat([]byte{byte(n)}, n)
			r.complete(t, i, want, RXD_STAT_DD|RXD_STAT_EOP|RXD_STAT_TCPCS, n)
			copies0, hand0 := r.d.q.rx.Stats.Copybreak.Load(), r.d.q.rx.Stats.Handoffs.Load()
			maps0, unmaps0, _ := r.DMA.Counts()
			got := r.poll()
			maps, unmaps, _ := r.DMA.Counts()
			if len(got) != 1 || !bytes.Equal(got[0].Data.Flatten(), want) || !got[0].CsumOK {
				t.Fatalf("cb %d n %d: %d packets", cb, n, len(got))
			}
			got[0].Data.Release()
			copied := r.d.q.rx.Stats.Copybreak.Load() - copies0
			handed := r.d.q.rx.Stats.Handoffs.Load() - hand0
			if n < cb {
				if copied != 1 || unmaps != unmaps0 {
					t.Errorf("cb %d n %d: copied %d, %d unmaps", cb, n, copied, unmaps-unmaps0)
				}
			} else if handed != 1 || unmaps != unmaps0+1 {
				t.Errorf("cb %d n %d: handed %d, %d unmaps", cb, n, handed, unmaps-unmaps0)
			}
			// The refill re-arms the slot the tail reaches: a fresh
			// buffer only if that slot's buffer went up the stack.
			if maps-maps0 > 1 {
				t.Errorf("cb %d n %d: %d maps in one poll", cb, n, maps-maps0)
			}
		}
		r.Close(t)
	}
}

func TestPollBadInput(t *testing.T) {
	r := newRig(t, 0x10D3)
	d := r.d
	good := bytes.Repeat([]byte{7}, 100)
	// 0: CRC error; 1: length 0; 2: length above the buffer; 3+4: a frame
	// spanning two buffers; 5: good.
	r.complete(t, 0, good, RXD_STAT_DD|RXD_STAT_EOP|RXDEXT_ERR_CE, 100)
	r.complete(t, 1, nil, RXD_STAT_DD|RXD_STAT_EOP, 0)
	r.complete(t, 2, good, RXD_STAT_DD|RXD_STAT_EOP, rxBufSize+1)
	r.complete(t, 3, good, RXD_STAT_DD, 2048)
	r.complete(t, 4, good, RXD_STAT_DD|RXD_STAT_EOP, 100)
	// 6 completes before 5: nothing past 5 may be taken until 5 is done.
	r.complete(t, 6, good, RXD_STAT_DD|RXD_STAT_EOP, 100)
	if got := r.poll(); len(got) != 0 {
		t.Fatalf("delivered %d bad frames", len(got))
	}
	if d.q.rx.Clean() != 5 {
		t.Fatalf("cleaned up to %d, want 5", d.q.rx.Clean())
	}
	r.complete(t, 5, good, RXD_STAT_DD|RXD_STAT_EOP, 100)
	got := r.poll()
	if len(got) != 2 {
		t.Fatalf("delivered %d after the gap closed, want 2", len(got))
	}
	for _, p := range got {
		if !bytes.Equal(p.Data.Flatten(), good) {
			t.Error("payload differs")
		}
		p.Data.Release()
	}
	s := &d.q.rx.Stats
	if s.Drops[ring.DropErrorBits].Load() != 1 || s.Drops[ring.DropLength].Load() != 2 || s.Drops[ring.DropMulti].Load() != 2 {
		t.Errorf("drops: error %d length %d multi %d", s.Drops[ring.DropErrorBits].Load(), s.Drops[ring.DropLength].Load(), s.Drops[ring.DropMulti].Load())
	}
	if d.q.rx.Armed() != rxDescs-1 {
		t.Errorf("ring not refilled: %d armed", d.q.rx.Armed())
	}
	r.Close(t)
}

func TestPollSurvivesMapFailure(t *testing.T) {
	r := newRig(t, 0x10D3)
	r.d.Ctl("copybreak 0")
	r.DMA.FailAllMaps(true)
	big := bytes.Repeat([]byte{1}, 1000)
	for k := 0; k < 300; k++ {
		i := r.d.q.rx.Clean()
		if r.d.q.rx.Armed() == 0 {
			break
		}
		r.complete(t, i, big, RXD_STAT_DD|RXD_STAT_EOP, len(big))
		for _, p := range r.poll() {
			p.Data.Release()
		}
	}
	if r.d.q.rx.Armed() != 0 || r.d.q.rx.Stats.MapFailures.Load() == 0 {
		t.Fatalf("armed %d map failures %d", r.d.q.rx.Armed(), r.d.q.rx.Stats.MapFailures.Load())
	}
	r.DMA.FailAllMaps(false)
	r.poll()
	if r.d.q.rx.Armed() != rxDescs-1 || int(r.regs.Get(RDT)) != r.d.q.rx.Tail() {
		t.Fatalf("after recovery armed %d RDT %d tail %d", r.d.q.rx.Armed(), r.regs.Get(RDT), r.d.q.rx.Tail())
	}
	r.Close(t)
}

func TestCtl(t *testing.T) {
	r := newRig(t, 0x10D3)
	d := r.d
	start := d.q.rx.Copybreak()
	for _, bad := range []string{"", "copybreak", "copybreak -1", "copybreak automatic", "copybreak 4097", "copybreak x", "copybreak-mode fast", "tso maybe", "mtu 9000", "mtu 10", "frob 1", "tso on off"} {
		if err := d.Ctl(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if d.q.rx.Copybreak() != start || d.q.rx.Mode() != ring.SyncNoUnmap || !d.Features().TSOv4 || d.MTU() != 1500 {
		t.Error("a bad command changed state")
	}
	for _, good := range []string{"copybreak 2048", "copybreak-mode unmap", "tso off", "mtu 2000"} {
		if err := d.Ctl(good); err != nil {
			t.Errorf("%q: %v", good, err)
		}
	}
	if d.q.rx.Copybreak() != 2048 || d.q.rx.Mode() != ring.UnmapAlways || d.Features().TSOv4 || d.MTU() != 2000 || r.regs.Get(RCTL)&RCTL_LPE == 0 {
		t.Error("good commands did not apply")
	}
	r.Close(t)
}

func TestStatsAccumulate(t *testing.T) {
	r := newRig(t, 0x10D3)
	find := func(name string) uint64 {
		for _, s := range r.d.Stats() {
			if s.Name == name {
				return s.Value
			}
		}
		t.Fatalf("no stat %q", name)
		return 0
	}
	r.regs.Set(nicstat.GPRC, 5)
	r.regs.Set(nicstat.GORCL, 0xffffffff)
	r.regs.Set(nicstat.GORCH, 1)
	if v := find("good_packets_rx"); v != 5 {
		t.Errorf("good_packets_rx %d", v)
	}
	r.regs.Set(nicstat.GPRC, 3)
	if v := find("good_packets_rx"); v != 8 {
		t.Errorf("good_packets_rx %d after a second read, want 8 (read-to-clear accumulated)", v)
	}
	if v := find("good_octets_rx"); v != 0x1ffffffff {
		t.Errorf("good_octets_rx %#x", v)
	}
	r.Close(t)
}

func itoa(n int) string { return strconv.Itoa(n) }

// txDescs returns the descriptors written since index from, up to the tail.
func txDescsFrom(d *Device, from int) [][]byte {
	var out [][]byte
	for i := from; i != d.q.tx.Tail(); i = d.q.tx.Descs.Next(i) {
		out = append(out, d.q.tx.Descs.At(i))
	}
	return out
}

func TestTransmitTSO(t *testing.T) {
	r := newRig(t, 0x10D3)
	d := r.d
	for _, v6 := range []bool{false, true} {
		from := d.q.tx.Tail()
		doorbells := r.regs.Writes(TDT)
		p1, _, _ := nictest.GSOPacket(v6, 1000, 10000)
		p2, _, _ := nictest.GSOPacket(v6, 1000, 3000)
		n, err := d.q.Transmit([]*nic.TxPacket{p1, p2})
		if n != 2 || err != nil {
			t.Fatalf("transmit: %d %v", n, err)
		}
		if r.regs.Writes(TDT) != doorbells+1 || int(r.regs.Get(TDT)) != d.q.tx.Tail() {
			t.Errorf("doorbells %d for one batch", r.regs.Writes(TDT)-doorbells)
		}
		descs := txDescsFrom(d, from)
		ctx := descs[0]
		dw2 := binary.LittleEndian.Uint32(ctx[8:])
		if dw2>>20&0xf != 0 || dw2>>24&TXD_CMD_TSE == 0 || dw2&0xfffff != 10000 {
			t.Fatalf("first descriptor is not a TSO context: % x", ctx)
		}
		if (dw2>>24&TXD_CMD_IP != 0) == v6 {
			t.Errorf("v6 %v: context IP bit %v", v6, dw2>>24&TXD_CMD_IP != 0)
		}
		mss := binary.LittleEndian.Uint16(ctx[14:])
		if (!v6 && mss != 1460) || (v6 && mss != 1440) {
			t.Errorf("mss %d", mss)
		}
		if d.q.tx.Stats.TSO.Load() == 0 {
			t.Error("TSO counter not counted")
		}
		for k, desc := range descs {
			a := binary.LittleEndian.Uint64(desc)
			dw2 := binary.LittleEndian.Uint32(desc[8:])
			if n := dw2 & 0xfffff; dw2>>20&0xf == 1 && a%4096+uint64(n) > 4096 {
				t.Errorf("data descriptor %d (%#x+%d) crosses a page", k, a, n)
			}
		}
	}
	// The device completes everything: reclaim unmaps all.
	for i := 0; i < d.q.tx.Descs.Len(); i++ {
		d.q.tx.Descs.At(i)[12] |= TXD_STAT_DD
	}
	if n := d.q.Reclaim(); n == 0 || d.q.tx.InFlight() != 0 || d.q.tx.Mapped() != 0 {
		t.Errorf("reclaimed %d, in flight %d, mapped %d", n, d.q.tx.InFlight(), d.q.tx.Mapped())
	}
	r.Close(t)
}

// TestTSOFallsBackOnLinkDrop: link at 1000 uses TSO; the link drops to 100
// mid-stream and a GSO packet built for TSO is segmented in software, no
// frame above the MTU, every checksum right.
func TestTSOFallsBackOnLinkDrop(t *testing.T) {
	r := newRig(t, 0x10D3)
	d := r.d
	if !d.Features().TSOv4 {
		t.Fatal("82574 at 1000 Mb/s without TSO")
	}
	r.regs.Set(STATUS, STATUS_LU|STATUS_FD|1<<STATUS_SPEED_SHIFT)
	r.regs.Set(ICR, ICR_LSC)
	r.poll()
	if d.Link().SpeedMbps != 100 || d.Features().TSOv4 {
		t.Fatalf("after drop to 100: link %+v features %+v", d.Link(), d.Features())
	}
	for _, v6 := range []bool{false, true} {
		from := d.q.tx.Tail()
		p, _, _ := nictest.GSOPacket(v6, 1000, 10000)
		if n, err := d.q.Transmit([]*nic.TxPacket{p}); n != 1 || err != nil {
			t.Fatalf("transmit %d %v", n, err)
		}
		var frames [][]byte
		for k, desc := range txDescsFrom(d, from) {
			dw2 := binary.LittleEndian.Uint32(desc[8:])
			if dw2>>20&0xf != 1 || dw2>>24&TXD_CMD_TSE != 0 {
				t.Fatalf("descriptor %d: %#x is not a plain data descriptor", k, dw2)
			}
			n := int(dw2 & 0xfffff)
			if n > d.MTU()+14 {
				t.Fatalf("frame of %d bytes above mtu", n)
			}
			frame := make([]byte, n)
			if err := r.DMA.DeviceRead(kernelAddr(desc), frame); err != nil {
				t.Fatal(err)
			}
			frames = append(frames, frame)
		}
		nictest.CheckGSO(t, frames, v6, 1000, 10000)
	}
	if d.q.tx.Stats.SoftGSO.Load() != 2 {
		t.Errorf("soft GSO counter %d", d.q.tx.Stats.SoftGSO.Load())
	}
	// Back at 1000 TSO returns; "tso on" forces it at 100.
	r.regs.Set(STATUS, status1000)
	r.regs.Set(ICR, ICR_LSC)
	r.poll()
	if !d.Features().TSOv4 {
		t.Error("TSO did not return at 1000 Mb/s")
	}
	r.Close(t)
}

func kernelAddr(desc []byte) kernel.DMAAddr { return kernel.DMAAddr(binary.LittleEndian.Uint64(desc)) }

func TestPCHSPTNeverTSO(t *testing.T) {
	r := newRig(t, 0x15B7)
	d := r.d
	if d.Type() != MacPCHSPT || d.Features().TSOv4 {
		t.Fatalf("%v features %+v", d.Type(), d.Features())
	}
	d.Ctl("tso on")
	r.regs.Set(ICR, ICR_LSC)
	r.poll()
	if d.Features().TSOv4 || d.Features().TSOv6 {
		t.Fatal("pch_spt uses TSO when forced")
	}
	from := d.q.tx.Tail()
	p, _, _ := nictest.GSOPacket(false, 1000, 5000)
	if n, err := d.q.Transmit([]*nic.TxPacket{p}); n != 1 || err != nil {
		t.Fatal(n, err)
	}
	for _, desc := range txDescsFrom(d, from) {
		if binary.LittleEndian.Uint32(desc[8:])>>24&TXD_CMD_TSE != 0 {
			t.Fatal("TSE set on pch_spt")
		}
	}
	r.Close(t)
}

func TestTransmitBackPressureAndBadPackets(t *testing.T) {
	r := newRig(t, 0x10D3)
	d := r.d
	var pkts []*nic.TxPacket
	for range 300 {
		pkts = append(pkts, &nic.TxPacket{Data: buffer.MakeWithData(bytes.Repeat([]byte{9}, 1000))})
	}
	n, err := d.q.Transmit(pkts)
	if err != nil || n != txDescs-1 {
		t.Fatalf("took %d (%v), want %d", n, err, txDescs-1)
	}
	// Frames that fit a bounce slot are copied there, never mapped.
	if d.q.tx.Stats.Full.Load() != 1 || d.q.tx.Mapped() != 0 || d.q.tx.Stats.Bounced.Load() != uint64(n) {
		t.Errorf("full %d mapped %d bounced %d", d.q.tx.Stats.Full.Load(), d.q.tx.Mapped(), d.q.tx.Stats.Bounced.Load())
	}
	// Completion out of order: a later descriptor done first frees nothing.
	d.q.tx.Descs.At(10)[12] |= TXD_STAT_DD
	if got := d.q.Reclaim(); got != 0 {
		t.Fatalf("reclaimed %d behind an unfinished descriptor", got)
	}
	for i := 0; i < 5; i++ {
		d.q.tx.Descs.At(i)[12] |= TXD_STAT_DD
	}
	if got := d.q.Reclaim(); got != 5 {
		t.Fatalf("reclaimed %d, want 5", got)
	}
	for _, p := range pkts[n:] {
		p.Data.Release()
	}
	bad := []*nic.TxPacket{
		{Data: buffer.MakeWithData(make([]byte, 10))},
		{Data: buffer.MakeWithData(make([]byte, 3000))},
		{Data: buffer.MakeWithData(make([]byte, 100)), NeedsCsum: true, CsumStart: 90, CsumOffset: 16},
		{Data: buffer.MakeWithData(make([]byte, 3000)), GSO: nic.GSOTCPv4, MSS: 1000, L3Len: 20, L4Len: 20},
	}
	for k, p := range bad {
		if n, err := d.q.Transmit([]*nic.TxPacket{p}); n != 0 || err == nil {
			t.Errorf("bad packet %d: took %d, err %v", k, n, err)
		}
		p.Data.Release()
	}
	r.Close(t)
}

// FuzzRxWriteback feeds arbitrary write-back descriptors to the RX path:
// whatever the device claims, the driver must not panic, must deliver
// only frames that fit a buffer, and must not leak or double-unmap.
func FuzzRxWriteback(f *testing.F) {
	f.Add(uint32(RXD_STAT_DD|RXD_STAT_EOP), uint16(64), uint32(RXD_STAT_DD), uint16(2048), uint16(256))
	f.Add(uint32(RXD_STAT_DD|RXD_STAT_EOP|RXDEXT_ERR_RXE), uint16(0), uint32(0), uint16(0xffff), uint16(0))
	f.Add(uint32(0xffffffff), uint16(0xffff), uint32(RXD_STAT_DD|RXD_STAT_EOP), uint16(1514), uint16(2048))
	f.Fuzz(func(t *testing.T, st1 uint32, len1 uint16, st2 uint32, len2 uint16, cb uint16) {
		r := newRig(t, 0x10D3)
		r.d.Ctl("copybreak " + itoa(int(cb)%2049))
		for round := 0; round < 3; round++ {
			i := r.d.q.rx.Clean()
			r.complete(t, i, nil, st1, int(len1))
			r.complete(t, r.d.q.rx.Descs.Next(i), nil, st2, int(len2))
			for _, p := range r.poll() {
				if n := p.Data.Size(); n <= 0 || n > rxBufSize {
					t.Fatalf("delivered a %d-byte frame", n)
				}
				p.Data.Release()
			}
			if r.d.q.rx.Armed() != rxDescs-1 {
				t.Fatalf("ring not refilled: %d", r.d.q.rx.Armed())
			}
		}
		r.Close(t)
	})
}

func TestUseAfterClose(t *testing.T) {
	r := newRig(t, 0x10D3)
	r.Close(t)
	d := r.d
	if n := nictest.Receive(&d.q, 64, func(*nic.RxPacket) { t.Error("delivered after close") }); n != 0 {
		t.Errorf("poll after close: %d", n)
	}
	p := &nic.TxPacket{Data: buffer.MakeWithData(make([]byte, 100))}
	if n, err := d.q.Transmit([]*nic.TxPacket{p}); n != 0 || err == nil {
		t.Errorf("transmit after close: %d %v", n, err)
	}
	p.Data.Release()
	if d.q.Reclaim() != 0 || d.Close() != nil || len(d.Stats()) == 0 {
		t.Error("reclaim, second close or stats after close misbehaved")
	}
}

// TestPollDropsFramesOnDMAFault: the device completes descriptors whose
// data write faulted; when the DMA view reports a new fault the frames of
// that poll are dropped and counted, and later frames flow again. A fault
// the poll sees before the device wrote the faulted descriptor back
// (late) is not spent on an empty poll: the next frames are dropped.
func TestPollDropsFramesOnDMAFault(t *testing.T) {
	for _, late := range []bool{false, true} {
		t.Run(map[bool]string{false: "with-write-back", true: "late"}[late], func(t *testing.T) {
			r := newRig(t, 0x10D3)
			frame := bytes.Repeat([]byte{3}, 400)
			done := uint32(RXD_STAT_DD | RXD_STAT_EOP)
			drops := 2
			if late {
				r.DMA.Fault()
				if got := r.poll(); len(got) != 0 {
					t.Fatalf("%d frames from an empty ring", len(got))
				}
				r.complete(t, 0, nil, done, len(frame)) // the faulted one
				drops = 1
			} else {
				r.complete(t, 0, frame, done, len(frame))
				r.complete(t, 1, nil, done, len(frame)) // its write faulted
				r.DMA.Fault()
			}
			if got := r.poll(); len(got) != 0 {
				t.Fatalf("%d frames delivered across a DMA fault", len(got))
			}
			if n := r.d.q.rx.Stats.Drops[ring.DropDMA].Load(); n != uint64(drops) {
				t.Errorf("rx_drop_dma %d, want %d", n, drops)
			}
			r.complete(t, drops, frame, done, len(frame))
			r.pollOne(t, frame, "after the fault")
			r.Close(t)
		})
	}
}

// TestTransmitFallsBackToBounceOnMapFailure: with a copy limit below
// the packet, a buffer the platform cannot map goes out through bounce
// space, byte for byte.
func TestTransmitFallsBackToBounceOnMapFailure(t *testing.T) {
	r := newRig(t, 0x10D3)
	d := r.d
	d.q.txSplit.CopyMax = 256
	p, _, _ := nictest.GSOPacket(false, 1000, 20000) // too large to be copied
	want := p.Data.Flatten()
	from := d.q.tx.Tail()
	r.DMA.FailAllMaps(true)
	n, err := d.q.Transmit([]*nic.TxPacket{p})
	r.DMA.FailAllMaps(false)
	if n != 1 || err != nil {
		t.Fatalf("transmit with maps failing: %d %v", n, err)
	}
	// What the device would read: every data descriptor after the TSO
	// context descriptor, in order.
	var got []byte
	for _, desc := range txDescsFrom(d, from)[1:] {
		b := make([]byte, binary.LittleEndian.Uint32(desc[8:])&0xfffff)
		if err := r.DMA.DeviceRead(kernelAddr(desc), b); err != nil {
			t.Fatal(err)
		}
		got = append(got, b...)
	}
	const hl = 14 + 20 + 20 // headers are rewritten for TSO
	if len(got) != len(want) || !bytes.Equal(got[hl:], want[hl:]) {
		t.Fatalf("device would read %d bytes of %d, or the payload differs", len(got), len(want))
	}
	if d.q.tx.Mapped() != 0 || d.q.tx.Stats.Bounced.Load() == 0 || d.q.tx.Stats.MapFailures.Load() == 0 {
		t.Errorf("mapped %d bounced %d map failures %d", d.q.tx.Mapped(), d.q.tx.Stats.Bounced.Load(), d.q.tx.Stats.MapFailures.Load())
	}
	r.Close(t)
}

// TestStartCopybreak: behind an IOMMU (a DMA view that counts faults)
// the device starts copying every frame, measures nothing at probe, and
// Tune measures the copybreak and shows the costs; with untranslated DMA
// it is Linux's 256 and nothing is measured.
func TestStartCopybreak(t *testing.T) {
	translated := fakedev.NewDMA()
	untranslated := struct{ kernel.DMA }{translated} // hides DMAFaults
	for _, c := range []struct {
		name     string
		dma      kernel.DMA
		measured bool
	}{{"translated", translated, true}, {"untranslated", untranslated, false}} {
		d := newCopybreakDevice(t, c.dma)
		if d.q.rx.Copybreak() != map[bool]int{true: TranslatedCopybreak, false: DefaultCopybreak}[c.measured] {
			t.Errorf("%s: copybreak %d at probe", c.name, d.q.rx.Copybreak())
		}
		if d.cbCosts.Load() != nil || translated.Live() != 0 {
			t.Errorf("%s: measured at probe (%d mappings)", c.name, translated.Live())
		}
		if err := d.Tune(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		costs := d.cbCosts.Load()
		switch {
		case c.measured && costs == nil:
			t.Errorf("%s: copybreak %d not measured", c.name, d.q.rx.Copybreak())
		case c.measured && d.q.rx.Copybreak() != min(costs.Copybreak, maxCopybreak):
			t.Errorf("%s: copybreak %d, measured %d", c.name, d.q.rx.Copybreak(), costs.Copybreak)
		case !c.measured && (costs != nil || d.q.rx.Copybreak() != DefaultCopybreak):
			t.Errorf("%s: copybreak %d (costs %v), want %d unmeasured", c.name, d.q.rx.Copybreak(), costs, DefaultCopybreak)
		}
		d.q.rx.Close()
	}
	if n := translated.Live(); n != 0 {
		t.Errorf("%d mappings left", n)
	}
}

// TestTuneYieldsToCtl: a copybreak the ctl set, before Tune or while its
// measurement runs, stays; a closed device measures nothing.
func TestTuneYieldsToCtl(t *testing.T) {
	dma := fakedev.NewDMA()
	d := newCopybreakDevice(t, dma)
	if err := d.Ctl("copybreak 100"); err != nil {
		t.Fatal(err)
	}
	if err := d.Tune(); err != nil {
		t.Fatal(err)
	}
	if got := d.q.rx.Copybreak(); got != 100 || d.cbCosts.Load() != nil {
		t.Errorf("Tune after copybreak 100: copybreak %d (costs %v)", got, d.cbCosts.Load())
	}
	d.q.rx.Close()

	// The ctl lands between the measurement's start and its result.
	d = newCopybreakDevice(t, dma)
	gen := d.cbGen.Load()
	d.setCopybreak(300)
	if err := d.measureCopybreak(gen); err != nil {
		t.Fatal(err)
	}
	if got := d.q.rx.Copybreak(); got != 300 || d.cbCosts.Load() != nil {
		t.Errorf("copybreak 300 during the measurement: copybreak %d (costs %v)", got, d.cbCosts.Load())
	}
	d.q.rx.Close()

	d = newCopybreakDevice(t, dma)
	d.closed.Store(true)
	if err := d.Tune(); err == nil || d.cbCosts.Load() != nil {
		t.Errorf("Tune on a closed device: %v, costs %v", err, d.cbCosts.Load())
	}
	d.q.rx.Close()
	if n := dma.Live(); n != 0 {
		t.Errorf("%d mappings left", n)
	}
}

// newCopybreakDevice is a device with an 8-descriptor RX ring over dma
// whose copybreak started as probe starts it.
func newCopybreakDevice(t *testing.T, dma kernel.DMA) *Device {
	t.Helper()
	d := &Device{name: "ether0", dma: dma, logf: t.Logf}
	var err error
	if d.q.rx, err = ring.NewRxRing(dma, 8, descSize, rxBufSize); err != nil {
		t.Fatal(err)
	}
	d.startCopybreak()
	return d
}

func TestCopybreakCtl(t *testing.T) {
	r := newRig(t, 0x10D3)
	defer r.Close(t)
	if err := r.d.Ctl("copybreak 100"); err != nil || r.d.q.rx.Copybreak() != 100 {
		t.Fatalf("copybreak 100: %v, copybreak %d", err, r.d.q.rx.Copybreak())
	}
	if err := r.d.Ctl("copybreak auto"); err != nil {
		t.Fatal(err)
	}
	c := r.d.cbCosts.Load()
	if c == nil || r.d.q.rx.Copybreak() != min(c.Copybreak, maxCopybreak) {
		t.Fatalf("copybreak auto: copybreak %d, costs %+v", r.d.q.rx.Copybreak(), c)
	}
	stats := map[string]uint64{}
	for _, s := range r.d.Stats() {
		stats[s.Name] = s.Value
	}
	for _, name := range []string{"copybreak_handoff_ns", "copybreak_copy64_ns", "copybreak_copy1514_ns", "copybreak_copy2048_ns"} {
		if stats[name] == 0 {
			t.Errorf("stats lack %s: %v", name, stats)
		}
	}
	if stats["copybreak"] != uint64(r.d.q.rx.Copybreak()) {
		t.Errorf("copybreak stat %d, copybreak %d", stats["copybreak"], r.d.q.rx.Copybreak())
	}
}

// TestTransmitCopiesTSO: the largest TSO payload is copied into bounce
// slots, nothing mapped, the device reading it byte for byte with EOP and
// RS on the last descriptor alone.
func TestTransmitCopiesTSO(t *testing.T) {
	r := newRig(t, 0x10D3)
	d := r.d
	p, _, _ := nictest.GSOPacket(false, 1000, txCopyMax-54)
	want := p.Data.Flatten()
	from := d.q.tx.Tail()
	if n, err := d.q.Transmit([]*nic.TxPacket{p}); n != 1 || err != nil {
		t.Fatalf("transmit: %d %v", n, err)
	}
	descs := txDescsFrom(d, from)[1:] // after the TSO context descriptor
	var got []byte
	for k, desc := range descs {
		b := make([]byte, binary.LittleEndian.Uint32(desc[8:])&0xfffff)
		if err := r.DMA.DeviceRead(kernelAddr(desc), b); err != nil {
			t.Fatal(err)
		}
		got = append(got, b...)
		end := desc[11]&(TXD_CMD_EOP|TXD_CMD_RS) == TXD_CMD_EOP|TXD_CMD_RS
		if end != (k == len(descs)-1) {
			t.Errorf("descriptor %d of %d: EOP|RS %v", k, len(descs), end)
		}
	}
	const hl = 14 + 20 + 20
	if len(got) != len(want) || !bytes.Equal(got[hl:], want[hl:]) {
		t.Fatalf("device would read %d bytes of %d, or the payload differs", len(got), len(want))
	}
	if d.q.tx.Mapped() != 0 || d.q.tx.Stats.Maps.Load() != 0 || d.q.tx.Stats.TSO.Load() != 1 {
		t.Errorf("mapped %d maps %d tso %d", d.q.tx.Mapped(), d.q.tx.Stats.Maps.Load(), d.q.tx.Stats.TSO.Load())
	}
	r.Close(t)
}

// TestRxReady: the next descriptor's write-back alone decides, in order
// (a later one done first does not count), and a closed device has none.
func TestRxReady(t *testing.T) {
	r := newRig(t, 0x10D3)
	d := r.d
	r.regs.Set(ICR, ICR_LSC) // a read would clear it
	if d.q.RxReady() {
		t.Fatal("ready with nothing written back")
	}
	next := d.q.rx.Clean()
	r.complete(t, d.q.rx.Descs.Next(next), make([]byte, 60), RXD_STAT_DD|RXD_STAT_EOP, 60)
	if d.q.RxReady() {
		t.Fatal("ready on a descriptor past the next one")
	}
	r.complete(t, next, make([]byte, 60), RXD_STAT_DD|RXD_STAT_EOP, 60)
	if !d.q.RxReady() {
		t.Fatal("not ready with the next descriptor written back")
	}
	if r.regs.Get(ICR) != ICR_LSC {
		t.Fatal("RxReady read ICR: it must touch no register")
	}
	for _, p := range r.poll() {
		p.Data.Release()
	}
	if d.q.RxReady() {
		t.Fatal("still ready after the poll took both frames")
	}
	r.complete(t, d.q.rx.Clean(), make([]byte, 60), RXD_STAT_DD|RXD_STAT_EOP, 60)
	r.Close(t)
	if d.q.RxReady() {
		t.Fatal("a closed device is ready")
	}
}

// FuzzCtl: every ctl command applies or is refused, naming the driver,
// with the registers and the settings as they were.
func FuzzCtl(f *testing.F) {
	r := newRig(f, 0x10D3)
	d := r.d
	nictest.FuzzCtl(f, d, "e1000e ether0", func() string {
		return fmt.Sprintf("mtu %d features %+v copybreak %d mode %v rx %d tx %d tso %d\n%s",
			d.MTU(), d.Features(), d.q.rx.Copybreak(), d.q.rx.Mode(), d.q.rx.Descs.Len(), d.q.tx.Descs.Len(), d.tsoMode.Load(), r.regs.Snapshot())
	})
}
