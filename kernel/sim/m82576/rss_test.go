package m82576

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/ether9/ether9/kernel/sim/nicmodel"
	"gvisor.dev/gvisor/pkg/tcpip"
)

// msKey is the default key of Microsoft's RSS verification suite, which
// the datasheet's hash example uses.
var msKey = [40]byte{
	0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2,
	0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0,
	0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4,
	0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c,
	0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
}

// rssVectors are the published verification vectors: source and
// destination address and port, the hash over the addresses, and over
// addresses and ports.
var rssVectors = []struct {
	src, dst        string
	sport, dport    uint16
	ipHash, tcpHash uint32
}{
	{"66.9.149.187", "161.142.100.80", 2794, 1766, 0x323e8fc2, 0x51ccc178},
	{"199.92.111.2", "65.69.140.83", 14230, 4739, 0xd718262a, 0xc626b0ea},
	{"24.19.198.95", "12.22.207.184", 12898, 38024, 0xd2d0a5de, 0x5c2b394a},
	{"38.27.205.30", "209.142.163.6", 48228, 2217, 0x82989176, 0xafc7327f},
	{"153.39.163.191", "202.188.127.2", 44251, 1303, 0x5d1809c5, 0x10e828a2},
	{"3ffe:2501:200:1fff::7", "3ffe:2501:200:3::1", 2794, 1766, 0x2cc18cd5, 0x40207d3d},
	{"3ffe:501:8::260:97ff:fe40:efab", "ff02::1", 14230, 4739, 0x0f0c461c, 0xdde51bbf},
	{"3ffe:1900:4545:3:200:f8ff:fe21:67cf", "fe80::200:f8ff:fe21:67cf", 44251, 38024, 0x4b61e985, 0x02d1feef},
}

func addr(s string) tcpip.Address {
	a := netip.MustParseAddr(s)
	if a.Is4() {
		return tcpip.AddrFrom4(a.As4())
	}
	return tcpip.AddrFrom16(a.As16())
}

func vectorFrame(src, dst tcpip.Address, sport, dport uint16) []byte {
	if src.Len() == 4 {
		return tcp4(src, dst, sport, dport, []byte("rss"))
	}
	return tcp6(src, dst, sport, dport, []byte("rss"))
}

func TestRSSHashVectors(t *testing.T) {
	for _, v := range rssVectors {
		f := vectorFrame(addr(v.src), addr(v.dst), v.sport, v.dport)
		p := nicmodel.Parse(f, 0x8100)
		all := uint32(MrqcTCPIPv4 | MrqcIPv4 | MrqcTCPIPv6 | MrqcIPv6)
		tab := nicmodel.NewToeplitzTable(&msKey)
		typ, h := rssHash(tab, all, &p)
		if h != v.tcpHash || (typ != RSSTCPIPv4 && typ != RSSTCPIPv6) {
			t.Errorf("%s:%d > %s:%d TCP: type %d hash %#08x, want %#08x", v.src, v.sport, v.dst, v.dport, typ, h, v.tcpHash)
		}
		typ, h = rssHash(tab, MrqcIPv4|MrqcIPv6, &p)
		if h != v.ipHash || (typ != RSSIPv4 && typ != RSSIPv6) {
			t.Errorf("%s > %s IP: type %d hash %#08x, want %#08x", v.src, v.dst, typ, h, v.ipHash)
		}
	}
}

// programRSS loads the key into RSSRK (byte 0 in the low byte of RSSRK0)
// and enables RSS with the given hash fields.
func (r *rig) programRSS(key *[40]byte, fields uint32) {
	for i := range uint32(10) {
		r.regs.Write32(RSSRK+4*i, binary.LittleEndian.Uint32(key[4*i:]))
	}
	r.regs.Write32(RXCSUM, RxcsumPCSD|RxcsumIPOFL|RxcsumTUOFL)
	r.regs.Write32(MRQC, MrqcRSS|fields)
}

// programRETA fills the redirection table with entry i = queue(i).
func (r *rig) programRETA(queue func(i uint32) uint32) {
	for i := range uint32(retaSize / 4) {
		var v uint32
		for b := range uint32(4) {
			v |= queue(4*i+b) << (8 * b)
		}
		r.regs.Write32(RETA+4*i, v)
	}
}

// The vectors through the registers: the write-back carries the hash
// and RSS type, and the frame lands on the queue RETA[hash & 127] names.
func TestRSSThroughModel(t *testing.T) {
	r := newRig(t)
	for q := range uint32(4) {
		r.setupRx(q, 16, 2048)
	}
	r.regs.Write32(RCTL, r.regs.Read32(RCTL)|RctlUPE|RctlMPE) // the vectors' destinations are not ours
	r.programRSS(&msKey, MrqcTCPIPv4|MrqcTCPIPv6|MrqcIPv4|MrqcIPv6)
	reta := func(i uint32) uint32 { return (i*7 + 1) % 4 }
	r.programRETA(reta)
	for _, v := range rssVectors {
		r.inject(vectorFrame(addr(v.src), addr(v.dst), v.sport, v.dport))
		q := reta(v.tcpHash & 127)
		_, wb, ok := r.takeRx(q)
		if !ok {
			t.Errorf("%s > %s: nothing on queue %d (counters %+v)", v.src, v.dst, q, r.nic.Counters().RxQueue)
			continue
		}
		if wb.hash != v.tcpHash {
			t.Errorf("%s > %s: hash %#08x, want %#08x", v.src, v.dst, wb.hash, v.tcpHash)
		}
		want := uint32(RSSTCPIPv4)
		if addr(v.src).Len() == 16 {
			want = RSSTCPIPv6
		}
		if wb.info&0xf != want {
			t.Errorf("%s > %s: RSS type %d, want %d", v.src, v.dst, wb.info&0xf, want)
		}
	}
	if c := r.nic.Counters(); c.RxFrames != uint64(len(rssVectors)) {
		t.Errorf("frames %d, want %d", c.RxFrames, len(rssVectors))
	}
	// A new key takes effect at once: with an all-zero key every hash
	// is 0, so every flow lands on RETA[0].
	for i := range uint32(10) {
		r.regs.Write32(RSSRK+4*i, 0)
	}
	v := rssVectors[0]
	r.inject(vectorFrame(addr(v.src), addr(v.dst), v.sport, v.dport))
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
	r.programRSS(&msKey, MrqcTCPIPv4|MrqcUDPIPv4)
	r.programRETA(func(i uint32) uint32 { return i % queues })
	var want [queues]int
	for port := range uint16(200) {
		f := udp4(srcIP4, dstIP4, 5000+port, 53, nil)
		p := nicmodel.Parse(f, 0x8100)
		_, h := rssHash(nicmodel.NewToeplitzTable(&msKey), MrqcUDPIPv4, &p)
		q := (h & 127) % queues
		want[q]++
		r.inject(f)
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
	r.regs.Write32(MRQC, 0)
	r.inject(udp4(srcIP4, dstIP4, 1, 53, nil))
	if _, _, ok := r.takeRx(0); !ok {
		t.Error("RSS off: frame not on queue 0")
	}
}
