package igb

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/ether9/ether9/drivers/adv"
	"github.com/ether9/ether9/drivers/internal/advplay"
	"github.com/ether9/ether9/drivers/internal/nictest"
	"github.com/ether9/ether9/drivers/nic"
	"gvisor.dev/gvisor/pkg/buffer"
)

func TestIDTable(t *testing.T) {
	seen := map[uint16]bool{}
	perType := map[MACType]int{}
	for _, id := range IDs {
		if seen[id.Device] {
			t.Errorf("device %04x listed twice", id.Device)
		}
		seen[id.Device] = true
		perType[id.Type]++
		got, info, err := Lookup(VendorIntel, id.Device)
		if err != nil || got != id || info.Type != id.Type || info.Queues < 1 {
			t.Errorf("Lookup(%04x) = %v, %+v, %v", id.Device, got, info, err)
		}
	}
	if len(IDs) < 37 {
		t.Errorf("%d ids, want the 37 physical functions", len(IDs))
	}
	for m := range macNames {
		if perType[m] == 0 {
			t.Errorf("MAC type %v has no ids", m)
		}
	}
	if _, _, err := Lookup(VendorIntel, 0x10d3); err == nil {
		t.Error("82574L (e1000e) claimed by igb")
	}
	if _, _, err := Lookup(0x10ec, 0x10c9); err == nil {
		t.Error("non-Intel vendor accepted")
	}
}

func TestProbeProgramsQueuesAndRSS(t *testing.T) {
	r := newRig(t)
	defer r.Close(t)
	if r.d.MAC() != testMAC {
		t.Fatalf("MAC %x", r.d.MAC())
	}
	if n := len(r.d.Queues()); n != maxQueues {
		t.Fatalf("%d queues", n)
	}
	for q := 0; q < maxQueues; q++ {
		s := r.regs.Get(adv.QueueReg(adv.SRRCTL, q))
		if s&(7<<25) != adv.SRRCTL_DESCTYPE_ADV_ONEBUF || s&0x7f != 2 {
			t.Errorf("queue %d SRRCTL %#x: want advanced one-buffer, 2 KiB", q, s)
		}
		if r.regs.Get(adv.QueueReg(adv.RXDCTL, q))&adv.XDCTL_ENABLE == 0 || r.regs.Get(adv.QueueReg(adv.TXDCTL, q))&adv.XDCTL_ENABLE == 0 {
			t.Errorf("queue %d not enabled", q)
		}
		if got := r.RxTail(q); got != rxDescs-1 {
			t.Errorf("queue %d RDT %d, want %d", q, got, rxDescs-1)
		}
	}
	if m := r.regs.Get(adv.MRQC); m&7 != adv.MRQC_ENABLE_RSS || m&adv.MRQC_RSS_FIELD_IPV4_TCP == 0 {
		t.Errorf("MRQC %#x", m)
	}
	hits := make([]int, maxQueues)
	for i := 0; i < adv.RETAEntries; i++ {
		v := r.regs.Get(adv.RETA + uint32(i/4*4))
		hits[v>>(8*(i%4))&0xff]++
	}
	for q, n := range hits {
		if n != adv.RETAEntries/maxQueues {
			t.Errorf("queue %d has %d RETA entries", q, n)
		}
	}
	if k := r.regs.Get(adv.RSSRK); k != 0xda565a6d {
		t.Errorf("RSSRK0 %#x", k)
	}
	if c := r.regs.phy[adv.PHY_BMCR]; c&(adv.BMCR_AN_ENABLE|adv.BMCR_AN_RESTART) != adv.BMCR_AN_ENABLE|adv.BMCR_AN_RESTART {
		t.Errorf("PHY control %#x: auto-negotiation not restarted", c)
	}
	if r.regs.Get(adv.RCTL)&adv.RCTL_EN == 0 || r.regs.Get(adv.TCTL)&adv.TCTL_EN == 0 {
		t.Error("RX or TX not enabled")
	}
}

// The Toeplitz function against the verification suite of Microsoft's
// RSS specification (IPv4 with TCP ports).
func TestToeplitz(t *testing.T) {
	// src 66.9.149.187:2794 dst 161.142.100.80:1766; input is src, dst, sport, dport.
	in := []byte{66, 9, 149, 187, 161, 142, 100, 80, 0x0a, 0xea, 0x06, 0xe6}
	if h := Toeplitz(in); h != 0x51ccc178 {
		t.Errorf("hash %#x, want 0x51ccc178", h)
	}
}

// A steady stream whose buffers the stack releases in time flips between
// page halves and maps nothing after the first fill.
func TestRxPageReuseSteadyState(t *testing.T) {
	r := newRig(t)
	defer r.Close(t)
	r.d.Ctl("copybreak 0")
	q := r.d.queues[0]
	const frames = 3 * rxDescs
	got := 0
	maps0 := -1
	for sent := 0; sent < frames; {
		if maps0 < 0 && sent >= rxDescs {
			maps0, _, _ = r.DMA.Counts() // every slot has had its page
		}
		for k := 0; k < 32 && sent < frames; k++ {
			if !r.Deliver(t, 0, frame(1000, byte(sent)), RXD_STAT_EOP, 0) {
				t.Fatal("ring empty")
			}
			sent++
		}
		nictest.Receive(q, 64, func(p *nic.RxPacket) {
			want := frame(1000, byte(got))
			if !bytes.Equal(p.Data.Flatten(), want) {
				t.Fatalf("frame %d corrupted", got)
			}
			got++
			p.Data.Release()
		})
	}
	if got != frames {
		t.Fatalf("%d frames delivered, want %d", got, frames)
	}
	maps, _, _ := r.DMA.Counts()
	if maps != maps0 {
		t.Errorf("%d maps in steady state", maps-maps0)
	}
	if f := r.Stat(t, "rx_page_flips"); f != frames {
		t.Errorf("rx_page_flips %d, want %d", f, frames)
	}
	if n := r.Stat(t, "rx_handoff"); n != frames {
		t.Errorf("rx_handoff %d", n)
	}
	if n := r.Stat(t, "rx_page_released"); n != 0 {
		t.Errorf("rx_page_released %d", n)
	}
}

// A stack that holds its frames keeps their pages: the device must never
// write into a half the stack holds, so the page is given up instead.
func TestRxPageHeldByStack(t *testing.T) {
	r := newRig(t)
	defer r.Close(t)
	r.d.Ctl("copybreak 0")
	q := r.d.queues[0]
	var held []buffer.Buffer
	const frames = 2 * rxDescs
	for sent := 0; sent < frames; {
		for k := 0; k < 16 && sent < frames; k++ {
			r.Deliver(t, 0, frame(1500, byte(sent)), RXD_STAT_EOP, 0)
			sent++
		}
		nictest.Receive(q, 64, func(p *nic.RxPacket) { held = append(held, p.Data) })
	}
	for i, b := range held {
		if !bytes.Equal(b.Flatten(), frame(1500, byte(i))) {
			t.Fatalf("held frame %d overwritten", i)
		}
		b.Release()
	}
	if n := r.Stat(t, "rx_page_released"); n == 0 {
		t.Error("no page given up while the stack held both halves")
	}
	if a, f := r.Stat(t, "rx_page_allocs"), r.Stat(t, "rx_page_flips"); a+f < frames {
		t.Errorf("allocs %d + flips %d < %d frames", a, f, frames)
	}
}

// By default a long frame goes up constructed: its headers in a head of
// its own, the rest a view of the half page, so the stack's header reads
// never copy the page; build on hands the half up alone.
func TestRxConstructAndBuild(t *testing.T) {
	r := newRig(t)
	defer r.Close(t)
	q := r.d.queues[0]
	tcp := frame(1000, 1)
	tcp[12], tcp[13] = 0x08, 0x00 // IPv4
	tcp[14], tcp[14+9] = 0x45, 6  // 20-byte header, TCP
	tcp[14+6], tcp[14+7] = 0, 0   // not a fragment
	tcp[14+20+12] = 5 << 4        // 20-byte TCP header
	for _, tc := range []struct {
		build string
		views []int
	}{{"off", []int{54, 946}}, {"on", []int{1000}}} {
		if err := r.d.Ctl("build " + tc.build); err != nil {
			t.Fatal(err)
		}
		addr := r.RxAddr(0)
		r.Deliver(t, 0, tcp, RXD_STAT_EOP, 0)
		var views []int
		nictest.Receive(q, 1, func(p *nic.RxPacket) {
			p.Data.SubApply(0, int(p.Data.Size()), func(v *buffer.View) { views = append(views, v.Size()) })
			if !bytes.Equal(p.Data.Flatten(), tcp) {
				t.Errorf("build %s: frame differs", tc.build)
			}
			// The device writes the half again: the head is the
			// packet's own, the rest (or the whole) the half's.
			if err := r.DMA.DeviceWrite(addr, bytes.Repeat([]byte{0xee}, 1000)); err != nil {
				t.Fatal(err)
			}
			b := p.Data.Flatten()
			if own := b[0] != 0xee; own != (tc.build == "off") || b[999] != 0xee {
				t.Errorf("build %s: after the device wrote the half, first byte %#x, last %#x", tc.build, b[0], b[999])
			}
			p.Data.Release()
		})
		if len(views) < 1 || views[0] < tc.views[0] || len(views) != len(tc.views) {
			t.Errorf("build %s: views %v, want %v (a head may take more)", tc.build, views, tc.views)
		}
	}
}

func TestRxCopybreakKeepsBuffer(t *testing.T) {
	r := newRig(t)
	defer r.Close(t)
	q := r.d.queues[2]
	for i := 0; i < 100; i++ {
		r.Deliver(t, 2, frame(64, byte(i)), RXD_STAT_EOP|RXD_STAT_L4CS, 0x1234)
		n := 0
		nictest.Receive(q, 64, func(p *nic.RxPacket) {
			if !bytes.Equal(p.Data.Flatten(), frame(64, byte(i))) || !p.CsumOK || p.Hash != 0x1234 {
				t.Fatalf("frame %d: %+v", i, p)
			}
			p.Data.Release()
			n++
		})
		if n != 1 {
			t.Fatalf("poll delivered %d", n)
		}
	}
	if c := r.Stat(t, "rx_copybreak"); c != 100 {
		t.Errorf("rx_copybreak %d", c)
	}
	if f := r.Stat(t, "rx_page_flips"); f != 0 {
		t.Errorf("rx_page_flips %d", f)
	}
}

func TestRxBadWritebacksRecycle(t *testing.T) {
	r := newRig(t)
	defer r.Close(t)
	q := r.d.queues[0]
	cases := []struct {
		staterr uint32
		n       int
		stat    string
	}{
		{RXD_STAT_EOP | RXDADV_ERR_CE, 100, "rx_drop_error"},
		{RXD_STAT_EOP, 0, "rx_drop_length"},
		{RXD_STAT_EOP, 4000, "rx_drop_length"},
		{0, 100, "rx_drop_multi"},            // no EOP: dropped ...
		{RXD_STAT_EOP, 100, "rx_drop_multi"}, // ... through its EOP
	}
	for _, c := range cases {
		h := r.RxHead[0]
		r.Writeback(0, h, c.staterr|RXD_STAT_DD, c.n, 0)
		r.RxHead[0] = q.rx.Descs.Next(h)
		before := r.Stat(t, c.stat)
		if n := nictest.Receive(q, 64, func(p *nic.RxPacket) { t.Fatalf("bad frame delivered") }); n != 1 {
			t.Fatalf("%+v: poll took %d", c, n)
		}
		if r.Stat(t, c.stat) != before+1 {
			t.Errorf("%+v: %s not counted", c, c.stat)
		}
	}
	if m, u := q.rx.Mapped(), r.Stat(t, "rx_unmaps"); m < rxDescs-1 || u != 0 {
		t.Errorf("%d pages mapped, %d unmapped: bad frames must recycle", m, u)
	}
}

func TestCtl(t *testing.T) {
	r := newRig(t)
	defer r.Close(t)
	for _, bad := range []string{"", "copybreak", "copybreak -1", "copybreak 5000", "tso maybe", "mtu 9000", "mtu x", "speed 10"} {
		if err := r.d.Ctl(bad); err == nil {
			t.Errorf("ctl %q accepted", bad)
		}
	}
	if err := r.d.Ctl("tso off"); err != nil || r.d.Features().TSOv4 {
		t.Errorf("tso off: %v %+v", err, r.d.Features())
	}
	if err := r.d.Ctl("mtu 2000"); err != nil || r.d.MTU() != 2000 || r.regs.Get(adv.RLPML) != 2000+22 {
		t.Errorf("mtu 2000: %v, mtu %d RLPML %d", err, r.d.MTU(), r.regs.Get(adv.RLPML))
	}
}

func TestTxChecksumAndTSODescriptors(t *testing.T) {
	r := newRig(t)
	defer r.Close(t)
	q := r.d.queues[1]
	// A TCP/IPv4 frame with 9000 bytes of payload, MSS 1000: its
	// mapping spans pages, and no descriptor may cross one.
	const payload = 9000
	f := make([]byte, 14+20+20+payload)
	copy(f, []byte{2, 0, 0, 0, 0, 1})
	copy(f[6:], testMAC[:])
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	ip := f[14:]
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], uint16(len(f)-14))
	ip[8], ip[9] = 64, 6
	copy(ip[12:], []byte{10, 0, 0, 1, 10, 0, 0, 2})
	tcp := ip[20:]
	tcp[12] = 5 << 4
	for i := range payload {
		f[54+i] = byte(i)
	}
	pkts := []*nic.TxPacket{
		{Data: buffer.MakeWithData(f), GSO: nic.GSOTCPv4, MSS: 1000, L3Len: 20, L4Len: 20, NeedsCsum: true, CsumStart: 34, CsumOffset: 16},
		{Data: buffer.MakeWithData(f[:54+100]), NeedsCsum: true, CsumStart: 34, CsumOffset: 16},
	}
	if n, err := q.Transmit(pkts); n != 2 || err != nil {
		t.Fatalf("transmit: %d, %v", n, err)
	}
	ctxs := r.Transmit(t, 1)
	if len(ctxs) != 2 || len(r.Wire) != 2 {
		t.Fatalf("%d contexts, %d frames", len(ctxs), len(r.Wire))
	}
	c := ctxs[0]
	maciplen := binary.LittleEndian.Uint32(c[0:])
	tucmd := binary.LittleEndian.Uint32(c[8:])
	mss := binary.LittleEndian.Uint32(c[12:])
	if maciplen != 20|14<<ADVTXD_MACLEN_SHIFT || tucmd&(ADVTXD_TUCMD_IPV4|ADVTXD_TUCMD_L4T_TCP) != ADVTXD_TUCMD_IPV4|ADVTXD_TUCMD_L4T_TCP || mss != 20<<8|1000<<16 {
		t.Errorf("TSO context %#x %#x %#x", maciplen, tucmd, mss)
	}
	if got := r.Wire[0]; len(got) != len(f) || !bytes.Equal(got[54:], f[54:]) || binary.BigEndian.Uint16(got[14+2:]) != 0 {
		t.Errorf("TSO frame: %d bytes, IP length %d", len(got), binary.BigEndian.Uint16(got[16:]))
	}
	if r.Stat(t, "tx_tso") != 1 || r.Stat(t, "tx_csum") != 1 {
		t.Errorf("tx_tso %d tx_csum %d", r.Stat(t, "tx_tso"), r.Stat(t, "tx_csum"))
	}
	if n := q.Reclaim(); n == 0 {
		t.Error("nothing reclaimed")
	}
	if m := q.Tx.Mapped(); m != 0 {
		t.Errorf("%d TX mappings after reclaim", m)
	}
}

// TestProbeQueuePairs: a platform that asks for fewer queue pairs gets
// that many, and RSS spreads over those alone (off for one).
func TestProbeQueuePairs(t *testing.T) {
	advplay.CheckQueuePairs(t, maxQueues, func(pairs int) (advplay.Regs, nic.NIC, error) {
		regs, d, err := probePairs(pairs)
		return regs, d, err
	})
}
