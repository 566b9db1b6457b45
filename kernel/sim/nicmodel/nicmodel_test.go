package nicmodel

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"

	"github.com/ether9/ether9/kernel/sim/nicmodel/nicmodeltest"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// The Microsoft verification suite, IPv4 and IPv6, with and without the
// ports; and the hash is linear.
func TestToeplitzVectors(t *testing.T) {
	key := nicmodeltest.RSSKey()
	for _, v := range nicmodeltest.RSSVectors() {
		if got := Toeplitz(&key, v.Input(false)); got != v.IPHash {
			t.Errorf("%v > %v: %#08x, want %#08x", v.Src, v.Dst, got, v.IPHash)
		}
		if got := Toeplitz(&key, v.Input(true)); got != v.L4Hash {
			t.Errorf("%v:%d > %v:%d: %#08x, want %#08x", v.Src, v.SrcPort, v.Dst, v.DstPort, got, v.L4Hash)
		}
	}
	// The hash of a XOR b is the XOR of the hashes.
	a, b := []byte{1, 2, 3, 4, 5, 6, 7, 8}, []byte{0x80, 0, 0xff, 9, 0, 0, 1, 0}
	x := make([]byte, 8)
	for i := range x {
		x[i] = a[i] ^ b[i]
	}
	if Toeplitz(&key, x) != Toeplitz(&key, a)^Toeplitz(&key, b) {
		t.Error("hash is not linear")
	}
}

func TestChecksumInsertion(t *testing.T) {
	f := make([]byte, 14+20+8+5)
	ip := header.IPv4(f[14:])
	src, dst := tcpip.AddrFrom4([4]byte{1, 2, 3, 4}), tcpip.AddrFrom4([4]byte{5, 6, 7, 8})
	ip.Encode(&header.IPv4Fields{TotalLength: 33, TTL: 1, Protocol: 17, SrcAddr: src, DstAddr: dst})
	u := header.UDP(ip.Payload())
	u.Encode(&header.UDPFields{SrcPort: 1, DstPort: 2, Length: 13})
	copy(u.Payload(), "hello")
	u.SetChecksum(header.PseudoHeaderChecksum(17, src, dst, 13))
	if !InsertIPChecksum(f, 14, 24, 34) || !ip.IsChecksumValid() {
		t.Error("IPv4 checksum not valid")
	}
	if !InsertL4Checksum(f, 34, 40, len(f), 0, true) {
		t.Fatal("L4 insertion refused")
	}
	if L4Sum(src.AsSlice(), dst.AsSlice(), 17, f[34:]) != 0xffff {
		t.Error("UDP checksum not valid")
	}
	if InsertIPChecksum(f, 14, len(f)-1, 34) || InsertL4Checksum(f, 40, 34, 30, 0, false) {
		t.Error("offsets outside the packet accepted")
	}
}

func TestIPv6Skip(t *testing.T) {
	hop := []byte{6, 0, 1, 4, 0, 0, 0, 0} // hop-by-hop, 8 bytes, then TCP
	tcp := make([]byte, 20)
	proto, l4, skipped := IPv6Skip(0, append(append([]byte{}, hop...), tcp...))
	if proto != 6 || len(l4) != 20 || skipped != 8 {
		t.Errorf("hop-by-hop: proto %d len %d skipped %d", proto, len(l4), skipped)
	}
	if proto, l4, skipped := IPv6Skip(ProtoUDP, tcp); proto != ProtoUDP || len(l4) != 20 || skipped != 0 {
		t.Errorf("no extension header: proto %d len %d skipped %d", proto, len(l4), skipped)
	}
	if _, l4, _ := IPv6Skip(44, make([]byte, 16)); l4 != nil {
		t.Error("a fragment has an L4 header")
	}
	if _, l4, _ := IPv6Skip(0, hop[:4]); l4 != nil {
		t.Error("truncated extension header accepted")
	}
}

func TestSegmentErrors(t *testing.T) {
	p := make([]byte, 100)
	bad := []TSO{
		{L3: 14, L4: 34, HdrLen: 54, MSS: 0, IPv4: true, TCP: true},
		{L3: 14, L4: 34, HdrLen: 40, MSS: 10, IPv4: true, TCP: true},
		{L3: 14, L4: 34, HdrLen: 200, MSS: 10, IPv4: true, TCP: true},
		{L3: 14, L4: 34, HdrLen: 54, MSS: 10, IPv4: true, TCP: true, L4Csum: true, TUCSO: 60},
	}
	for i, s := range bad {
		if _, err := s.Segment(p, nil, func([]byte) { t.Error("emitted") }); !errors.Is(err, ErrBadTSO) {
			t.Errorf("case %d: err %v", i, err)
		}
	}
}

// Segment against gVisor's parsers: IPv4 with UDP length fix-up too.
func TestSegmentIPv4TCP(t *testing.T) {
	payload := bytes.Repeat([]byte{1, 2, 3, 4, 5}, 1000)
	f := make([]byte, 54+len(payload))
	ip := header.IPv4(f[14:])
	src, dst := tcpip.AddrFrom4([4]byte{10, 0, 0, 1}), tcpip.AddrFrom4([4]byte{10, 0, 0, 2})
	ip.Encode(&header.IPv4Fields{TTL: 64, Protocol: 6, ID: 100, SrcAddr: src, DstAddr: dst})
	tcp := header.TCP(f[34:])
	tcp.Encode(&header.TCPFields{SeqNum: 5, DataOffset: 20, Flags: header.TCPFlagAck | header.TCPFlagFin})
	tcp.SetChecksum(header.PseudoHeaderChecksum(6, src, dst, 0))
	copy(f[54:], payload)
	s := TSO{L3: 14, L4: 34, HdrLen: 54, MSS: 1000, IPv4: true, TCP: true, IPCSO: 24, IPCSEnd: 34,
		TUCSO: 50, IPCsum: true, L4Csum: true, Flags: DefaultFlagMasks}
	var n int
	var got []byte
	_, err := s.Segment(f, nil, func(seg []byte) {
		ip := header.IPv4(seg[14:])
		if !ip.IsChecksumValid() || int(ip.TotalLength()) != len(seg)-14 || ip.ID() != uint16(100+n) {
			t.Errorf("segment %d: bad IP header", n)
		}
		tcp := header.TCP(ip.Payload())
		if checksum.Checksum(tcp, header.PseudoHeaderChecksum(6, src, dst, uint16(len(tcp)))) != 0xffff {
			t.Errorf("segment %d: bad TCP checksum", n)
		}
		if fin := tcp.Flags()&header.TCPFlagFin != 0; fin != (n == 4) {
			t.Errorf("segment %d: FIN %v", n, fin)
		}
		if tcp.SequenceNumber() != 5+uint32(len(got)) {
			t.Errorf("segment %d: seq %d", n, tcp.SequenceNumber())
		}
		got = append(got, tcp.Payload()...)
		n++
	})
	if err != nil || n != 5 || !bytes.Equal(got, payload) {
		t.Errorf("err %v, %d segments, payload equal %v", err, n, bytes.Equal(got, payload))
	}
}

func TestFrameHelpers(t *testing.T) {
	bc := bytes.Repeat([]byte{0xff}, 14)
	if !IsBroadcast(bc) || IsMulticast(bc) || !IsMulticast([]byte{1, 0, 0x5e, 0, 0, 1}) {
		t.Error("broadcast/multicast classification")
	}
	for _, c := range []struct{ l, bin int }{{64, 0}, {65, 1}, {127, 1}, {128, 2}, {1023, 4}, {1024, 5}, {1522, 5}} {
		if SizeBin(c.l) != c.bin {
			t.Errorf("SizeBin(%d) = %d, want %d", c.l, SizeBin(c.l), c.bin)
		}
	}
	f := []byte{1, 0, 0x5e, 0, 0x12, 0x34}
	for mo, want := range []uint32{0x341, 0x682, 0xd04, 0x412} {
		if h := MTAHash(f, uint32(mo)); h != want {
			t.Errorf("MTAHash with MO %d = %#x, want %#x", mo, h, want)
		}
	}
}

func TestToeplitzTable(t *testing.T) {
	key := nicmodeltest.RSSKey()
	tab := NewToeplitzTable(&key)
	in := make([]byte, 36)
	for i := range 2000 {
		for j := range in {
			in[j] = byte(i*131 + j*29 + i*j)
		}
		n := 8 + i%29
		if got, want := tab.Hash(in[:n]), Toeplitz(&key, in[:n]); got != want {
			t.Fatalf("input %x: table %#x, bitwise %#x", in[:n], got, want)
		}
	}
}

func BenchmarkToeplitzTable(b *testing.B) {
	key := nicmodeltest.RSSKey()
	tab := NewToeplitzTable(&key)
	in := make([]byte, 12)
	for range b.N {
		tab.Hash(in)
	}
}

func BenchmarkToeplitz(b *testing.B) {
	key := nicmodeltest.RSSKey()
	in := make([]byte, 12)
	for range b.N {
		Toeplitz(&key, in)
	}
}

func TestRxFrame(t *testing.T) {
	f := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0x81, 0x00, 0x20, 0x05, 0x08, 0x00, 0xaa, 0xbb}
	var r RxFrame
	if d, tci := r.Build(f, false, false); &d[0] != &f[0] || tci != 0 {
		t.Error("a frame stored as it came was copied")
	}
	d, tci := r.Build(f, true, false)
	if tci != 0x2005 || !bytes.Equal(d, append(append([]byte{}, f[:12]...), f[16:]...)) {
		t.Errorf("stripped: % x, TCI %#x", d, tci)
	}
	d, _ = r.Build(f, true, true)
	if len(d) != len(f)-VLANTagLen+4 || binary.LittleEndian.Uint32(d[len(d)-4:]) != crc32.ChecksumIEEE(f) {
		t.Errorf("with FCS: % x", d)
	}
	if d, tci := r.Build(f[:14], true, false); len(d) != 14 || tci != 0 {
		t.Errorf("a frame too short to carry a tag: % x, TCI %#x", d, tci)
	}
}

func TestTables(t *testing.T) {
	f := []byte{1, 0, 0x5e, 0, 0, 0xfb, 2, 0, 0, 0, 0, 1, 0x81, 0x00, 0xa0, 0x2a}
	if id := VLANID(f); id != 0x02a {
		t.Errorf("VLAN id %#x, want 0x02a (the priority bits left out)", id)
	}
	table := make([]uint32, 128)
	table[0x2a>>5] = 1 << (0x2a & 31)
	if !TableBit(table, 0x2a) || TableBit(table, 0x2b) || TableBit(table, 0x2a+32) {
		t.Error("table bits")
	}
	// 01:00:5e:00:00:fb with MO 0 hashes address bits 47:36.
	if h := MTAHash(f, 0); h != 0xfb0 {
		t.Errorf("MTA hash %#x, want 0xfb0", h)
	}
}
