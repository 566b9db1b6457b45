package ring

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/ether9/ether9/kernel"
	"gvisor.dev/gvisor/pkg/buffer"
)

// ipv4Frame is an n-byte Ethernet frame carrying IPv4 protocol proto,
// its bytes after the IP header counting up from seed.
func ipv4Frame(n int, proto, seed byte) []byte {
	f := make([]byte, n)
	for i := range f {
		f[i] = seed + byte(i)
	}
	binary.BigEndian.PutUint16(f[12:], etherTypeIPv4)
	f[14] = 0x45
	binary.BigEndian.PutUint16(f[16:], uint16(n-14))
	binary.BigEndian.PutUint16(f[20:], 0) // not a fragment
	f[23] = proto
	return f
}

func TestHeaderLen(t *testing.T) {
	udp := ipv4Frame(1000, 17, 0)
	tcp := ipv4Frame(1000, 6, 0)
	tcp[14+20+12] = 8 << 4 // 32-byte TCP header
	frag := ipv4Frame(1000, 17, 0)
	binary.BigEndian.PutUint16(frag[20:], 0x2000) // more fragments
	v6 := make([]byte, 1000)
	binary.BigEndian.PutUint16(v6[12:], etherTypeIPv6)
	v6[14+6] = 17
	vlan := append(append(append([]byte{}, tcp[:12]...), 0x81, 0x00, 0, 5), tcp[12:]...)
	arp := make([]byte, 1000)
	binary.BigEndian.PutUint16(arp[12:], 0x0806)
	badIHL := ipv4Frame(1000, 6, 0)
	badIHL[14] = 0x41
	for _, tc := range []struct {
		name string
		b    []byte
		want int
	}{
		{"udp", udp, 42}, {"tcp", tcp, 66}, {"fragment", frag, 34}, {"ipv6-udp", v6, 62},
		{"vlan-tcp", vlan, 70}, {"arp", arp, 14}, {"ihl<5", badIHL, 14}, {"short", udp[:200], 200},
		{"exactly HeaderCopy", udp[:HeaderCopy], HeaderCopy},
	} {
		if got := HeaderLen(tc.b); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

// FuzzHeaderLen: any frame's head is within it and within HeaderCopy,
// and a frame that fits the head is copied whole.
func FuzzHeaderLen(f *testing.F) {
	f.Add(ipv4Frame(300, 6, 0))
	f.Add(ipv4Frame(300, 17, 0))
	f.Add(append(bytes.Repeat([]byte{0}, 12), 0x81, 0, 0, 0, 0x88, 0xa8, 0, 0, 0x86, 0xdd))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < ethHdrLen {
			return // the ring never sees a runt this short: the MAC pads to 60
		}
		n := HeaderLen(b)
		if n < 0 || n > len(b) || n > HeaderCopy && n != len(b) || len(b) <= HeaderCopy && n != len(b) {
			t.Fatalf("HeaderLen of %d bytes: %d", len(b), n)
		}
	})
}

// Construct's head holds the headers in a view of its own, so that a
// header pull-up never copies the page; the rest shares the page; the
// bytes are the frame's.
func TestConstructSharesOnlyTheRest(t *testing.T) {
	page := buffer.NewViewSize(kernel.PageSize)
	defer page.Release()
	const off = HalfPage
	f := ipv4Frame(1514, 6, 3)
	f[14+20+12] = 5 << 4
	copy(page.AsSlice()[off:], f)

	buf, shared := Construct(page, off, page.AsSlice()[off:off+len(f)])
	if !shared {
		t.Fatal("a 1514-byte frame did not share the page")
	}
	if n, _ := chunkRefs(page); n != 2 {
		t.Fatalf("page refs %d after construct, want 2", n)
	}
	if !bytes.Equal(buf.Flatten(), f) {
		t.Fatal("constructed bytes differ from the frame")
	}
	// The stack's header pull-ups: served from the head, the page's
	// count untouched (a clone of the page would drop it to 1).
	if _, ok := buf.PullUp(0, 54); !ok {
		t.Fatal("pull-up of the headers failed")
	}
	if n, _ := chunkRefs(page); n != 2 {
		t.Fatalf("page refs %d after a header pull-up: the page was copied", n)
	}
	buf.Release()
	if n, _ := chunkRefs(page); n != 1 {
		t.Fatalf("page refs %d after release", n)
	}

	small := ipv4Frame(200, 17, 0)
	copy(page.AsSlice(), small)
	buf, shared = Construct(page, 0, page.AsSlice()[:len(small)])
	if shared || !bytes.Equal(buf.Flatten(), small) {
		t.Fatalf("a 200-byte frame: shared %v, bytes equal %v", shared, bytes.Equal(buf.Flatten(), small))
	}
	if n, _ := chunkRefs(page); n != 1 {
		t.Fatalf("page refs %d after a whole copy", n)
	}
	buf.Release()
}
