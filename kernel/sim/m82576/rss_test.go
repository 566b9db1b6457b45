package m82576

import (
	"encoding/binary"
	"testing"

	"github.com/ether9/ether9/kernel/sim/nicmodel"
	"github.com/ether9/ether9/kernel/sim/nicmodel/nicmodeltest"
	"gvisor.dev/gvisor/pkg/tcpip"
)

func vectorFrame(src, dst tcpip.Address, sport, dport uint16) []byte {
	if src.Len() == 4 {
		return tcp4(src, dst, sport, dport, []byte("rss"))
	}
	return tcp6(src, dst, sport, dport, []byte("rss"))
}

// The verification suite through the model's parser and its choice of
// hash type: ports for TCP when the TCP types are on, addresses alone
// when only the IP types are.
func TestRSSHashVectors(t *testing.T) {
	key := nicmodeltest.RSSKey()
	tab := nicmodel.NewToeplitzTable(&key)
	for _, v := range nicmodeltest.RSSVectors() {
		f := vectorFrame(v.Src, v.Dst, v.SrcPort, v.DstPort)
		p := nicmodel.Parse(f, 0x8100)
		all := uint32(nicmodel.MrqcTCPIPv4 | nicmodel.MrqcIPv4 | nicmodel.MrqcTCPIPv6 | nicmodel.MrqcIPv6)
		typ, h := rssHash(tab, all, &p)
		if h != v.L4Hash || (typ != RSSTCPIPv4 && typ != RSSTCPIPv6) {
			t.Errorf("%v:%d > %v:%d TCP: type %d hash %#08x, want %#08x", v.Src, v.SrcPort, v.Dst, v.DstPort, typ, h, v.L4Hash)
		}
		typ, h = rssHash(tab, nicmodel.MrqcIPv4|nicmodel.MrqcIPv6, &p)
		if h != v.IPHash || (typ != RSSIPv4 && typ != RSSIPv6) {
			t.Errorf("%v > %v IP: type %d hash %#08x, want %#08x", v.Src, v.Dst, typ, h, v.IPHash)
		}
	}
}

// programRSS loads the verification suite's key into RSSRK (byte 0 in
// the low byte of RSSRK0) and enables RSS with the given hash fields.
func (r *rig) programRSS(fields uint32) {
	key := nicmodeltest.RSSKey()
	for i := range uint32(10) {
		r.Regs.Write32(nicmodel.RSSRK+4*i, binary.LittleEndian.Uint32(key[4*i:]))
	}
	r.Regs.Write32(nicmodel.RXCSUM, nicmodel.RxcsumPCSD|nicmodel.RxcsumIPOFL|nicmodel.RxcsumTUOFL)
	r.Regs.Write32(nicmodel.MRQC, MrqcRSS|fields)
}

// programRETA fills the redirection table with entry i = queue(i).
func (r *rig) programRETA(queue func(i uint32) uint32) {
	for i := range uint32(retaSize / 4) {
		var v uint32
		for b := range uint32(4) {
			v |= queue(4*i+b) << (8 * b)
		}
		r.Regs.Write32(nicmodel.RETA+4*i, v)
	}
}

// The vectors through the registers: the write-back carries the hash
// and RSS type, and the frame lands on the queue RETA[hash & 127] names.
func TestRSSThroughModel(t *testing.T) {
	r := newRig(t)
	for q := range uint32(4) {
		r.setupRx(q, 16, 2048)
	}
	r.Regs.Write32(nicmodel.RCTL, r.Regs.Read32(nicmodel.RCTL)|nicmodel.RctlUPE|nicmodel.RctlMPE) // the vectors' destinations are not ours
	r.programRSS(nicmodel.MrqcTCPIPv4 | nicmodel.MrqcTCPIPv6 | nicmodel.MrqcIPv4 | nicmodel.MrqcIPv6)
	reta := func(i uint32) uint32 { return (i*7 + 1) % 4 }
	r.programRETA(reta)
	vectors := nicmodeltest.RSSVectors()
	for _, v := range vectors {
		r.Inject(vectorFrame(v.Src, v.Dst, v.SrcPort, v.DstPort))
		q := reta(v.L4Hash & 127)
		_, wb, ok := r.takeRx(q)
		if !ok {
			t.Errorf("%v > %v: nothing on queue %d (counters %+v)", v.Src, v.Dst, q, r.nic.Counters().RxQueue)
			continue
		}
		if wb.hash != v.L4Hash {
			t.Errorf("%v > %v: hash %#08x, want %#08x", v.Src, v.Dst, wb.hash, v.L4Hash)
		}
		want := uint32(RSSTCPIPv4)
		if v.Src.Len() == 16 {
			want = RSSTCPIPv6
		}
		if wb.info&0xf != want {
			t.Errorf("%v > %v: RSS type %d, want %d", v.Src, v.Dst, wb.info&0xf, want)
		}
	}
	if c := r.nic.Counters(); c.RxFrames != uint64(len(vectors)) {
		t.Errorf("frames %d, want %d", c.RxFrames, len(vectors))
	}
	// A new key takes effect at once: with an all-zero key every hash
	// is 0, so every flow lands on RETA[0].
	for i := range uint32(10) {
		r.Regs.Write32(nicmodel.RSSRK+4*i, 0)
	}
	v := vectors[0]
	r.Inject(vectorFrame(v.Src, v.Dst, v.SrcPort, v.DstPort))
	if _, wb, ok := r.takeRx(reta(0)); !ok || wb.hash != 0 {
		t.Errorf("after the key changed: ok %v hash %#x, want 0 on queue %d", ok, wb.hash, reta(0))
	}
}

// Many flows spread over the queues exactly as the table says, and one
// flow always lands on one queue.
func TestRETASelection(t *testing.T) {
	r := newRig(t)
	const queues = 8
	for q := range uint32(queues) {
		r.setupRx(q, 64, 2048)
	}
	key := nicmodeltest.RSSKey()
	tab := nicmodel.NewToeplitzTable(&key)
	r.programRSS(nicmodel.MrqcTCPIPv4 | nicmodel.MrqcUDPIPv4)
	r.programRETA(func(i uint32) uint32 { return i % queues })
	var want [queues]int
	for port := range uint16(200) {
		f := udp4(srcIP4, dstIP4, 5000+port, 53, nil)
		p := nicmodel.Parse(f, 0x8100)
		_, h := rssHash(tab, nicmodel.MrqcUDPIPv4, &p)
		q := (h & 127) % queues
		want[q]++
		r.Inject(f)
		got, wb, ok := r.takeRx(q)
		if !ok || wb.hash != h || wb.info&0xf != RSSUDPIPv4 {
			t.Fatalf("port %d: not on queue %d with hash %#x (ok %v, wb %+v)", 5000+port, q, h, ok, wb)
		}
		if len(got) != len(f) {
			t.Fatalf("length %d, want %d", len(got), len(f))
		}
	}
	c := r.nic.Counters()
	used := 0
	for q := range queues {
		if c.RxQueue[q] != uint64(want[q]) {
			t.Errorf("queue %d: %d frames, want %d", q, c.RxQueue[q], want[q])
		}
		if want[q] > 0 {
			used++
		}
	}
	if used < queues/2 {
		t.Errorf("200 flows used only %d of %d queues", used, queues)
	}
	// With RSS off everything goes to queue 0.
	r.Regs.Write32(nicmodel.MRQC, 0)
	r.Inject(udp4(srcIP4, dstIP4, 1, 53, nil))
	if _, _, ok := r.takeRx(0); !ok {
		t.Error("RSS off: frame not on queue 0")
	}
}
