package igc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/ether9/ether9/drivers/adv"
	"github.com/ether9/ether9/drivers/internal/advplay"
	"github.com/ether9/ether9/drivers/internal/fakedev"
	"github.com/ether9/ether9/drivers/internal/nictest"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/ring"
	"github.com/ether9/ether9/drivers/xsk"
	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/pci"
	"gvisor.dev/gvisor/pkg/buffer"
)

func TestIDs(t *testing.T) {
	want := []uint16{0x15f2, 0x15f3, 0x15f8, 0x3100, 0x3101, 0x5502, 0x0d9f, 0x15fd,
		0x15f7, 0x125e, 0x125b, 0x125c, 0x125d, 0x3102, 0x5503, 0x125f}
	if len(IDs) != len(want) {
		t.Fatalf("%d ids, want %d", len(IDs), len(want))
	}
	seen := map[uint16]bool{}
	for _, dev := range want {
		id, err := Lookup(VendorIntel, dev)
		if err != nil {
			t.Fatalf("%04x: %v", dev, err)
		}
		if seen[dev] {
			t.Fatalf("%04x listed twice", dev)
		}
		seen[dev] = true
		blank := dev == 0x15fd || dev == 0x125f
		if (id.Flags&FlagBlankNVM != 0) != blank {
			t.Errorf("%04x %s: blank-NVM flag %v", dev, id.Name, !blank)
		}
	}
	for _, bad := range [][2]uint16{{VendorIntel, 0x10c9}, {VendorIntel, 0x15f4}, {0x10ec, 0x15f3}} {
		if _, err := Lookup(bad[0], bad[1]); !errors.Is(err, ErrUnknownDevice) {
			t.Errorf("%04x:%04x: err %v, want ErrUnknownDevice", bad[0], bad[1], err)
		}
	}
}

func TestProbeRefusesUnknownDevice(t *testing.T) {
	dma := fakedev.NewDMA()
	_, err := probeOn(newRegFile(status2500).withMAC(testMAC), dma, 0x1533) // an I210
	if !errors.Is(err, ErrUnknownDevice) {
		t.Fatalf("probe of 8086:1533: %v, want ErrUnknownDevice", err)
	}
	if n := dma.Live(); n != 0 {
		t.Fatalf("%d mappings after a refused probe", n)
	}
}

func TestBlankNVM(t *testing.T) {
	for _, tc := range []struct {
		dev   uint16
		blank bool
	}{{0x15fd, true}, {0x125f, true}, {0x15f3, false}, {0x125c, false}} {
		t.Run(fmt.Sprintf("%04x", tc.dev), func(t *testing.T) {
			regs := newRegFile(status2500) // no address in RAL/RAH, erased NVM
			dma := fakedev.NewDMA()
			d, err := probeOn(regs, dma, tc.dev)
			if !tc.blank {
				if err == nil || !bytes.Contains([]byte(err.Error()), []byte("no valid MAC")) {
					t.Fatalf("probe: %v, want a no-valid-MAC error", err)
				}
				if dma.Live() != 0 {
					t.Fatal("mappings left after a failed probe")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			m := d.MAC()
			if want := localMAC(0, [3]uint8{3, 0, 0}); m[0]&2 == 0 || m[0]&1 != 0 || m != want {
				t.Fatalf("mac %x: want the locally administered unicast %x", m, want)
			}
			if lo, hi := regs.Get(adv.RAL0), regs.Get(adv.RAH0); hi&adv.RAH_AV == 0 || byte(lo) != m[0] || byte(hi>>8) != m[5] {
				t.Fatalf("RAL0/RAH0 %08x/%08x not programmed with %x", lo, hi, m)
			}
		})
	}
}

func TestMACFromNVM(t *testing.T) {
	regs := newRegFile(status2500)
	regs.nvm = []uint16{0x1100, 0x3322, 0x5544}
	d, err := probeOn(regs, fakedev.NewDMA(), 0x125b)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if m := d.MAC(); m != [6]byte{0x00, 0x11, 0x22, 0x33, 0x44, 0x55} {
		t.Fatalf("mac %x from NVM words", m)
	}
}

func TestLinkFromStatus(t *testing.T) {
	for _, tc := range []struct {
		status uint32
		want   nic.Link
	}{
		{0, nic.Link{}},
		{adv.STATUS_FD | STATUS_SPEED_2500, nic.Link{}},
		{adv.STATUS_LU, nic.Link{Up: true, SpeedMbps: 10}},
		{adv.STATUS_LU | adv.STATUS_FD | 1<<adv.STATUS_SPEED_SHIFT, nic.Link{Up: true, SpeedMbps: 100, FullDuplex: true}},
		{adv.STATUS_LU | adv.STATUS_FD | 2<<adv.STATUS_SPEED_SHIFT, nic.Link{Up: true, SpeedMbps: 1000, FullDuplex: true}},
		{adv.STATUS_LU | adv.STATUS_FD | 3<<adv.STATUS_SPEED_SHIFT, nic.Link{Up: true, SpeedMbps: 1000, FullDuplex: true}},
		{status2500, nic.Link{Up: true, SpeedMbps: 2500, FullDuplex: true}},
		// The 2.5 Gb/s bit qualifies only the 1000 Mb/s code.
		{adv.STATUS_LU | adv.STATUS_FD | 1<<adv.STATUS_SPEED_SHIFT | STATUS_SPEED_2500, nic.Link{Up: true, SpeedMbps: 100, FullDuplex: true}},
	} {
		if got := linkFromStatus(tc.status); got != tc.want {
			t.Errorf("STATUS %#x: %+v, want %+v", tc.status, got, tc.want)
		}
	}
}

func TestLinkChange(t *testing.T) {
	r := newRig(t)
	defer r.Close(t)
	if l := r.d.Link(); l != (nic.Link{Up: true, SpeedMbps: 2500, FullDuplex: true}) {
		t.Fatalf("link at probe %+v", l)
	}
	before := r.Stat(t, "link_changes")
	r.regs.Set(adv.STATUS, adv.STATUS_LU|adv.STATUS_FD|1<<adv.STATUS_SPEED_SHIFT)
	r.regs.Set(adv.ICR, adv.ICR_LSC)
	r.poll(2)
	if l := r.d.Link(); l.SpeedMbps != 2500 {
		t.Fatalf("a busy queue's poll read the link: %+v", l)
	}
	r.d.queues[2].Wait(0) // any queue going idle looks
	if l := r.d.Link(); l.SpeedMbps != 100 {
		t.Fatalf("link after LSC %+v", l)
	}
	if r.Stat(t, "link_changes") != before+1 {
		t.Fatal("link change not counted")
	}
}

func TestChooseLayout(t *testing.T) {
	if MaxFrameBuild != 1648 {
		t.Fatalf("MaxFrameBuild %d, want 1648 (2048 - 64 headroom - 320 - 16)", MaxFrameBuild)
	}
	threshold := MaxFrameBuild - adv.FrameExtra
	for _, tc := range []struct {
		build, prog bool
		mtu         int
		want        Layout
	}{
		{true, false, 1500, Build},
		{true, false, threshold, Build},
		{true, false, threshold + 1, Construct},
		{true, false, maxMTU, Construct},
		{true, true, 1500, Construct},
		{false, false, 1500, Construct},
		{true, false, minMTU, Build},
	} {
		if got := chooseLayout(tc.build, tc.prog, tc.mtu); got != tc.want {
			t.Errorf("build %v program %v mtu %d: %v, want %v", tc.build, tc.prog, tc.mtu, got, tc.want)
		}
	}
}

func TestBringUp(t *testing.T) {
	r := newRig(t)
	defer r.Close(t)
	regs := r.regs
	if v := regs.Get(adv.RCTL); v&adv.RCTL_EN == 0 || v&adv.RCTL_LPE == 0 || v&adv.RCTL_SECRC == 0 {
		t.Errorf("RCTL %#x", v)
	}
	if v := regs.Get(adv.TCTL); v&adv.TCTL_EN == 0 {
		t.Errorf("TCTL %#x", v)
	}
	if v := regs.Get(adv.RLPML); v != 1500+adv.FrameExtra {
		t.Errorf("RLPML %d", v)
	}
	if v := regs.Get(adv.MRQC); v&adv.MRQC_ENABLE_RSS == 0 {
		t.Errorf("MRQC %#x: RSS off with %d queues", v, len(r.d.queues))
	}
	for q := range r.d.queues {
		if v := regs.Get(adv.QueueReg(adv.SRRCTL, q)); v&adv.SRRCTL_DESCTYPE_ADV_ONEBUF == 0 || v&0x7f != 2 {
			t.Errorf("queue %d SRRCTL %#x", q, v)
		}
		if v := regs.Get(adv.QueueReg(adv.RXDCTL, q)); v&adv.XDCTL_ENABLE == 0 {
			t.Errorf("queue %d RXDCTL %#x", q, v)
		}
		if v := r.RxTail(q); v != rxDescs-1 {
			t.Errorf("queue %d tail %d", q, v)
		}
		// The build layout: each frame lands rxHeadroom into a half page.
		if a := r.RxAddr(q); a%rxBufLen != rxHeadroom {
			t.Errorf("queue %d buffer address %#x: not rxHeadroom into a half page", q, a)
		}
	}
	if l, _ := r.d.Layout(0); l != Build {
		t.Fatalf("layout %v at mtu 1500", l)
	}
}

// receive delivers frames on queue 0 and polls them up.
func (r *rig) receive(t *testing.T, frames ...[]byte) [][]byte {
	t.Helper()
	for _, f := range frames {
		if !r.Deliver(t, 0, f, adv.RXD_STAT_EOP, rssHash) {
			t.Fatal("no armed descriptor")
		}
	}
	return r.poll(0)
}

func TestRxBuildAndConstructSameBytes(t *testing.T) {
	sizes := []int{60, 64, 255, 256, 257, 600, 1514, 1518}
	var frames [][]byte
	for i, n := range sizes {
		frames = append(frames, udpFrame(n, byte(i)))
	}
	for _, policy := range []string{"auto", "off"} {
		t.Run(policy, func(t *testing.T) {
			r := newRig(t)
			defer r.Close(t)
			if err := r.d.Ctl("build " + policy); err != nil {
				t.Fatal(err)
			}
			r.RestartRx(0)
			for round := 0; round < 3; round++ { // round 2 runs on flipped halves
				got := r.receive(t, frames...)
				if len(got) != len(frames) {
					t.Fatalf("%d frames up, want %d", len(got), len(frames))
				}
				for i := range got {
					if !bytes.Equal(got[i], frames[i]) {
						t.Fatalf("round %d frame %d (%d bytes) differs", round, i, len(frames[i]))
					}
				}
			}
			built, constructed := r.Stat(t, "rx_build"), r.Stat(t, "rx_construct")
			n := uint64(3 * len(frames))
			if policy == "auto" && (built != n || constructed != 0) {
				t.Fatalf("build %d construct %d, want %d built", built, constructed, n)
			}
			if policy == "off" && (built != 0 || constructed != n) {
				t.Fatalf("build %d construct %d, want %d constructed", built, constructed, n)
			}
		})
	}
}

func TestConstructCopiesHeadersOnly(t *testing.T) {
	r := newRig(t)
	defer r.Close(t)
	if err := r.d.Ctl("build off"); err != nil {
		t.Fatal(err)
	}
	r.RestartRx(0)
	// The head holds the headers; gVisor may fill the head's spare
	// capacity from the rest when joining them, so the head is at least
	// the headers and the rest is a view over the RX buffer.
	for _, tc := range []struct{ n, head int }{{64, 64}, {256, 256}, {257, 42}, {1514, 42}} {
		f := udpFrame(tc.n, 7)
		r.Deliver(t, 0, f, adv.RXD_STAT_EOP, rssHash)
		var views []int
		nictest.Receive(r.d.queues[0], 1, func(p *nic.RxPacket) {
			p.Data.SubApply(0, int(p.Data.Size()), func(v *buffer.View) { views = append(views, v.Size()) })
			if !bytes.Equal(p.Data.Flatten(), f) {
				t.Errorf("%d-byte frame differs", tc.n)
			}
			p.Data.Release()
		})
		whole := tc.n <= ring.HeaderCopy
		if whole && (len(views) != 1 || views[0] != tc.n) || !whole && (len(views) != 2 || views[0] < tc.head || views[0] > ring.HeaderCopy) {
			t.Errorf("%d-byte frame: views %v, want a %d-byte head", tc.n, views, tc.head)
		}
	}
}

func TestBuildIsZeroCopy(t *testing.T) {
	r := newRig(t)
	defer r.Close(t)
	f := udpFrame(64, 1)
	addr := r.RxAddr(0)
	r.Deliver(t, 0, f, adv.RXD_STAT_EOP, rssHash)
	var pkt *nic.RxPacket
	nictest.Receive(r.d.queues[0], 1, func(p *nic.RxPacket) { pkt = p })
	defer pkt.Data.Release()
	// The device writes the buffer again: a view over it sees the change.
	if err := r.DMA.DeviceWrite(addr, []byte{0xee}); err != nil {
		t.Fatal(err)
	}
	if b := pkt.Data.Flatten(); b[0] != 0xee {
		t.Fatalf("built packet is a copy: first byte %#x", b[0])
	}
}

func TestThreshold(t *testing.T) {
	threshold := MaxFrameBuild - adv.FrameExtra
	for _, tc := range []struct {
		mtu  int
		want Layout
	}{{threshold, Build}, {threshold + 1, Construct}} {
		t.Run(fmt.Sprint(tc.mtu), func(t *testing.T) {
			r := newRig(t)
			defer r.Close(t)
			if err := r.d.Ctl(fmt.Sprintf("mtu %d", tc.mtu)); err != nil {
				t.Fatal(err)
			}
			if l, _ := r.d.Layout(0); l != tc.want {
				t.Fatalf("mtu %d: layout %v, want %v", tc.mtu, l, tc.want)
			}
			if v := r.regs.Get(adv.RLPML); int(v) != maxFrame(tc.mtu) {
				t.Fatalf("RLPML %d, want %d", v, maxFrame(tc.mtu))
			}
			f := udpFrame(maxFrame(tc.mtu)-adv.FCSLen, 3) // the longest frame after FCS strip
			got := r.receive(t, f)
			if len(got) != 1 || !bytes.Equal(got[0], f) {
				t.Fatalf("%d-byte frame not received intact", len(f))
			}
		})
	}
}

func TestMTUChangeAtRunTime(t *testing.T) {
	r := newRig(t)
	defer r.Close(t)
	threshold := MaxFrameBuild - adv.FrameExtra
	small := udpFrame(100, 9)
	steps := []struct {
		ctl  string
		want Layout
	}{{"mtu 1500", Build}, {fmt.Sprintf("mtu %d", threshold+1), Construct}, {"mtu 9000", Construct}, {"mtu 1500", Build}, {"mtu 2026", Construct}}
	for _, s := range steps {
		relayouts := r.Stat(t, "rx_relayouts")
		err := r.d.Ctl(s.ctl)
		if s.ctl == "mtu 9000" {
			if err == nil {
				t.Fatal("mtu 9000 accepted with 2 KiB buffers")
			}
		} else if err != nil {
			t.Fatal(err)
		}
		l, _ := r.d.Layout(0)
		if l != s.want {
			t.Fatalf("after %q: layout %v, want %v", s.ctl, l, s.want)
		}
		if r.Stat(t, "rx_relayouts") != relayouts {
			r.RestartRx(0)
		}
		if a := r.RxAddr(0); int(a%rxBufLen) != l.headroom() {
			t.Fatalf("after %q: buffer address %#x, headroom %d", s.ctl, a, l.headroom())
		}
		// Frames in flight from before the change are lost: the device
		// starts over at descriptor 0, each time with the new layout.
		got := r.receive(t, small)
		if len(got) != 1 || !bytes.Equal(got[0], small) {
			t.Fatalf("after %q: frame not received intact", s.ctl)
		}
	}
	if r.Stat(t, "rx_relayouts") == 0 {
		t.Fatal("no relayout counted")
	}
}

func TestProgramForcesConstruct(t *testing.T) {
	r := newRig(t)
	defer r.Close(t)
	var seen int
	if err := r.d.SetProgram(0, func(b []byte) xsk.Verdict {
		seen++
		if b[len(b)-1] == 0xff {
			return xsk.Drop
		}
		return xsk.Pass
	}); err != nil {
		t.Fatal(err)
	}
	if l, _ := r.d.Layout(0); l != Construct {
		t.Fatalf("layout %v with a program", l)
	}
	r.RestartRx(0)
	keep, drop := udpFrame(100, 1), udpFrame(100, 1)
	drop[99] = 0xff
	got := r.receive(t, keep, drop)
	if seen != 2 || len(got) != 1 || !bytes.Equal(got[0], keep) {
		t.Fatalf("program saw %d, %d frames up", seen, len(got))
	}
	if err := r.d.SetProgram(0, nil); err != nil {
		t.Fatal(err)
	}
	if l, _ := r.d.Layout(0); l != Build {
		t.Fatalf("layout %v after detaching", l)
	}
	if err := r.d.SetProgram(4, nil); !errors.Is(err, xsk.ErrNoQueue) {
		t.Fatalf("program on queue 4: %v", err)
	}
}

func TestRxErrorsRecycle(t *testing.T) {
	r := newRig(t)
	defer r.Close(t)
	f := udpFrame(200, 2)
	r.Deliver(t, 0, f, adv.RXD_STAT_EOP|adv.RXDEXT_ERR_CE, rssHash)
	r.Deliver(t, 0, f, 0, rssHash) // first part of a multi-buffer frame
	r.Deliver(t, 0, f, adv.RXD_STAT_EOP, rssHash)
	r.Deliver(t, 0, f, adv.RXD_STAT_EOP, rssHash)
	got := r.poll(0)
	if len(got) != 1 || !bytes.Equal(got[0], f) {
		t.Fatalf("%d frames up, want the one good one", len(got))
	}
	if r.Stat(t, "rx_drop_error") != 1 || r.Stat(t, "rx_drop_multi") != 2 {
		t.Fatalf("drops: error %d multi %d", r.Stat(t, "rx_drop_error"), r.Stat(t, "rx_drop_multi"))
	}
	maps, _, _ := r.DMA.Counts()
	if maps != int(r.Stat(t, "rx_page_allocs"))+int(r.Stat(t, "rx_chunk_maps"))+int(r.Stat(t, "tx_maps")) {
		t.Fatalf("maps %d: dropped frames must not remap", maps)
	}
}

func TestPagesFlipAndAreReleased(t *testing.T) {
	r := newRig(t)
	defer r.Close(t)
	if err := r.d.Ctl("build off"); err != nil { // half pages are construct's
		t.Fatal(err)
	}
	f := udpFrame(300, 4)
	r.receive(t, f) // the one slot left empty at bring-up gets its page
	allocs := r.Stat(t, "rx_page_allocs")
	// Frames released at once: the ring keeps flipping, allocates nothing.
	for i := 0; i < 4*rxDescs; i++ {
		r.receive(t, f)
	}
	if a := r.Stat(t, "rx_page_allocs"); a != allocs {
		t.Fatalf("%d pages allocated while every frame was released", a-allocs)
	}
	if r.Stat(t, "rx_page_flips") == 0 {
		t.Fatal("no page flipped")
	}
	// Frames held: the stack keeps both halves, the ring must let go.
	held := holdFrames(t, r, f, 3)
	for i := 0; i < rxDescs; i++ {
		r.receive(t, f)
	}
	checkHeld(t, held, f)
	if r.Stat(t, "rx_page_released") == 0 {
		t.Fatal("no page released while the stack held packets")
	}
}

// TestChunksReturnAndStayBounded: the build layout re-arms chunks the
// stack released under their old mappings, never re-arms one it holds,
// and keeps a bounded number mapped.
func TestChunksReturnAndStayBounded(t *testing.T) {
	r := newRig(t)
	defer r.Close(t)
	if l, _ := r.d.Layout(0); l != Build {
		t.Fatalf("layout %v, want build", l)
	}
	f := udpFrame(64, 4)
	held := holdFrames(t, r, f, 3)
	for i := 0; i < 4*rxDescs; i++ {
		r.receive(t, f)
	}
	checkHeld(t, held, f)
	if r.Stat(t, "rx_chunk_reuses") == 0 {
		t.Fatal("no released chunk came back under its mapping")
	}
	if n := r.d.queues[0].rx.chunks.len(); n > maxMapped(rxDescs) {
		t.Fatalf("%d chunks mapped, bound %d", n, maxMapped(rxDescs))
	}
	if r.Stat(t, "rx_page_allocs") != 0 || r.Stat(t, "rx_page_flips") != 0 {
		t.Fatal("the build layout used half pages")
	}
}

func holdFrames(t *testing.T, r *rig, f []byte, n int) []buffer.Buffer {
	t.Helper()
	var held []buffer.Buffer
	for i := 0; i < n; i++ {
		r.Deliver(t, 0, f, adv.RXD_STAT_EOP, rssHash)
		nictest.Receive(r.d.queues[0], 1, func(p *nic.RxPacket) { held = append(held, p.Data) })
	}
	if len(held) != n {
		t.Fatalf("%d of %d frames up", len(held), n)
	}
	return held
}

func checkHeld(t *testing.T, held []buffer.Buffer, f []byte) {
	t.Helper()
	for _, b := range held {
		if !bytes.Equal(b.Flatten(), f) {
			t.Fatal("a held packet changed under the stack")
		}
		b.Release()
	}
}

func TestRxMapFailureRetries(t *testing.T) {
	dma := fakedev.NewDMA()
	regs := newRegFile(status2500).withMAC(testMAC)
	dma.FailAllMaps(true)
	if _, err := probeOn(regs, dma, 0x15f3); err != nil {
		t.Fatalf("probe with no RX buffers: %v", err)
	}
}

func TestTransmitChecksumAndTSO(t *testing.T) {
	r := newRig(t)
	defer r.Close(t)
	f := udpFrame(300, 5)
	p := &nic.TxPacket{Data: buffer.MakeWithData(f), NeedsCsum: true, CsumStart: 34, CsumOffset: 6}
	if n, err := r.d.queues[0].Transmit([]*nic.TxPacket{p}); n != 1 || err != nil {
		t.Fatalf("transmit: %d %v", n, err)
	}
	ctxs := r.Transmit(t, 0)
	if len(ctxs) != 1 || len(r.Wire) != 1 || !bytes.Equal(r.Wire[0], f) {
		t.Fatalf("%d contexts, %d frames", len(ctxs), len(r.Wire))
	}
	c := binary.LittleEndian.Uint32(ctxs[0][0:])
	if c&adv.MaxIPLen != 20 || c>>adv.TXD_MACLEN_SHIFT != 14 {
		t.Fatalf("context lens %#x", c)
	}
	if r.d.queues[0].Reclaim() == 0 {
		t.Fatal("nothing reclaimed")
	}
	// A frame above the MTU that is not GSO is refused, nothing queued.
	big := &nic.TxPacket{Data: buffer.MakeWithData(udpFrame(1600, 1))}
	if n, err := r.d.queues[0].Transmit([]*nic.TxPacket{big}); n != 0 || err == nil {
		t.Fatalf("oversize frame: %d %v", n, err)
	}
	if r.d.queues[0].Tx.InFlight() != 0 {
		t.Fatal("refused frame left descriptors")
	}
}

func TestCtlErrors(t *testing.T) {
	r := newRig(t)
	defer r.Close(t)
	for _, c := range []string{"", "mtu", "mtu x", "mtu 67", "mtu 2027", "build maybe", "tso sideways", "bogus 1"} {
		if err := r.d.Ctl(c); err == nil {
			t.Errorf("ctl %q accepted", c)
		}
	}
	if r.d.MTU() != 1500 {
		t.Fatalf("mtu %d after bad commands", r.d.MTU())
	}
	if err := r.d.Ctl("tso off"); err != nil || r.d.Features().TSOv4 {
		t.Fatalf("tso off: %v %+v", err, r.d.Features())
	}
}

var _ kernel.DMA = (*fakedev.DMA)(nil)

func TestRSS(t *testing.T) {
	r := newRig(t)
	defer r.Close(t)
	seen := map[uint32]bool{}
	for i := 0; i < adv.RETAEntries/4; i++ {
		v := r.regs.Get(adv.RETA + uint32(4*i))
		for j := 0; j < 4; j++ {
			seen[v>>(8*j)&0xff] = true
		}
	}
	if len(seen) != maxQueues {
		t.Fatalf("redirection table reaches queues %v, want all %d", seen, maxQueues)
	}
	if k := r.regs.Get(adv.RSSRK); k != 0xda565a6d {
		t.Fatalf("RSSRK[0] %#x", k)
	}
	if err := r.d.Ctl("rss off"); err != nil {
		t.Fatal(err)
	}
	if v := r.regs.Get(adv.MRQC); v != 0 {
		t.Fatalf("MRQC %#x with rss off", v)
	}
	for i := 0; i < adv.RETAEntries/4; i++ {
		if v := r.regs.Get(adv.RETA + uint32(4*i)); v != 0 {
			t.Fatalf("RETA[%d] %#x with rss off", i, v)
		}
	}
	if err := r.d.Ctl("rss on"); err != nil || r.regs.Get(adv.MRQC)&adv.MRQC_ENABLE_RSS == 0 {
		t.Fatalf("rss on: %v, MRQC %#x", err, r.regs.Get(adv.MRQC))
	}
}

// TestConcurrentControl runs the poll loop, transmit, statistics and
// layout changes at once: the race detector checks the driver's locking.
func TestConcurrentControl(t *testing.T) {
	r := newRig(t)
	defer r.Close(t)
	stop := make(chan struct{})
	done := make(chan struct{}, 3)
	// loop runs step until stop is closed.
	loop := func(step func()) {
		for {
			select {
			case <-stop:
				done <- struct{}{}
				return
			default:
				step()
			}
		}
	}
	go loop(func() {
		for _, q := range r.d.queues {
			nictest.Receive(q, 64, func(p *nic.RxPacket) { p.Data.Release() })
		}
	})
	go loop(func() {
		p := &nic.TxPacket{Data: buffer.MakeWithData(udpFrame(100, 1))}
		r.d.queues[1].Transmit([]*nic.TxPacket{p})
		r.d.queues[1].Reclaim()
	})
	go loop(func() {
		r.d.Stats()
		r.d.Layout(0)
	})
	for i := 0; i < 50; i++ {
		for _, c := range []string{"mtu 1700", "build off", "build auto", "mtu 1500", "rss off", "rss on", "tso off", "tso on"} {
			if err := r.d.Ctl(c); err != nil {
				t.Fatal(err)
			}
		}
		if err := r.d.SetProgram(0, func([]byte) xsk.Verdict { return xsk.Pass }); err != nil {
			t.Fatal(err)
		}
		if err := r.d.SetProgram(0, nil); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	for i := 0; i < 3; i++ {
		<-done
	}
	if l, _ := r.d.Layout(0); l != Build {
		t.Fatalf("layout %v after the storm", l)
	}
}

// dsnConfig is a config space holding one device serial number capability.
type dsnConfig struct{ serial uint64 }

func (c dsnConfig) ReadConfig(a pci.Addr, off, size int) (uint32, error) {
	switch off {
	case 0x104:
		return uint32(c.serial), nil
	case 0x108:
		return uint32(c.serial >> 32), nil
	}
	return 0, fmt.Errorf("config read at %#x", off)
}

func (dsnConfig) WriteConfig(pci.Addr, int, int, uint32) error { return errors.New("read only") }

func TestBlankNVMSerial(t *testing.T) {
	byLocation := [6]byte{0x02, 0x49, 0x47, 3, 0, 0}
	for _, tc := range []struct {
		serial uint64
		want   [6]byte
	}{
		{0x0011_22ff_fe33_4455, [6]byte{0x02, 0x55 ^ 0x22, 0x44 ^ 0x11, 0x33, 0xfe, 0xff}},
		{^uint64(0), byLocation}, // blank serial
		{0, byLocation},
	} {
		f := &pci.Function{Addr: pci.Addr{Bus: 3}, Vendor: VendorIntel, Device: 0x125f,
			Caps: []pci.Capability{{ID: pci.ExtCapDSN, Offset: 0x100, Extended: true}}}
		d, err := probe(&nic.Device{Name: "ether0", Func: f, Config: dsnConfig{tc.serial}, Regs: newRegFile(status2500), DMA: fakedev.NewDMA(), Clock: sim.NewClock()})
		if err != nil {
			t.Fatal(err)
		}
		if m := d.MAC(); m != tc.want {
			t.Errorf("serial %#x: mac %x, want %x", tc.serial, m, tc.want)
		}
		d.Close()
	}
}

// TestProbeQueuePairs: a platform that asks for fewer queue pairs gets
// that many, and RSS spreads over those alone (off for one).
func TestProbeQueuePairs(t *testing.T) {
	advplay.CheckQueuePairs(t, maxQueues, func(pairs int) (advplay.Regs, nic.NIC, error) {
		regs := newRegFile(status2500).withMAC(testMAC)
		dev := deviceOn(regs, fakedev.NewDMA(), 0x15f3)
		dev.Queues = pairs
		d, err := probe(dev)
		return regs, d, err
	})
}
