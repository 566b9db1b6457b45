package sim

import (
	"bytes"
	"testing"

	"github.com/ether9/ether9/kernel"
)

// Bytes pinned by more than one buffer (a prefix, an overlap, a buffer
// holding another) keep one physical address: each pin resolves them to
// the same place, the device reads and writes them there for all of
// them, and they stay registered until the last pin holding them goes.
// A memory that refused such pins made a driver drop every packet cut
// from a chunk already mapped, and TCP, sending the same bytes again,
// never got past them.
func TestPinShared(t *testing.T) {
	for _, coherent := range []bool{true, false} {
		m := NewMemory()
		m.SetCoherent(coherent)
		backing := make([]byte, 3*kernel.PageSize)
		for i := range backing {
			backing[i] = byte(i)
		}
		bufs := [][]byte{
			backing[100:2148],                 // the chunk
			backing[100:1100],                 // a prefix of it
			backing[600:2600],                 // over its tail
			backing[0 : 2*kernel.PageSize+50], // holding all of them
		}
		var segs [][]kernel.Segment
		for i, b := range bufs {
			s, err := m.Pin(b)
			if err != nil {
				t.Fatalf("coherent %v: pin %d: %v", coherent, i, err)
			}
			segs = append(segs, s)
		}
		// phys maps a byte of backing through buffer i's segments.
		phys := func(i, at int) kernel.PhysAddr {
			off := at - int(keyOf(bufs[i])-keyOf(backing))
			for _, s := range segs[i] {
				if off < s.Len {
					return s.Phys + kernel.PhysAddr(off)
				}
				off -= s.Len
			}
			t.Fatalf("byte %d is not in buffer %d", at, i)
			return 0
		}
		for _, at := range []int{100, 700, 1099, 2000, 2147} {
			want := phys(0, at)
			for i := range bufs {
				if at < int(keyOf(bufs[i])-keyOf(backing)) || at >= int(keyOf(bufs[i])-keyOf(backing))+len(bufs[i]) {
					continue
				}
				if got := phys(i, at); got != want {
					t.Errorf("coherent %v: byte %d: buffer %d puts it at %#x, buffer 0 at %#x", coherent, at, i, got, want)
				}
			}
		}
		// The device writes through the prefix's address; the CPU reads
		// it through the chunk's sync.
		if err := m.DeviceWrite(phys(1, 200), []byte("shared")); err != nil {
			t.Fatal(err)
		}
		m.SyncForCPU(phys(0, 200), 6)
		if got := backing[200:206]; !bytes.Equal(got, []byte("shared")) {
			t.Errorf("coherent %v: the CPU reads %q where the device wrote", coherent, got)
		}
		// Each buffer's own bytes reach the device.
		got := make([]byte, 4)
		if err := m.DeviceRead(phys(3, 10), got); err != nil || !bytes.Equal(got, backing[10:14]) {
			t.Errorf("coherent %v: device read of the outer buffer: %v, %v", coherent, got, err)
		}
		// The chunk goes first: the bytes others hold stay registered.
		for i, b := range bufs {
			if err := m.Unpin(b); err != nil {
				t.Fatalf("unpin %d: %v", i, err)
			}
			if i < len(bufs)-1 {
				if err := m.DeviceRead(phys(3, 700), got); err != nil {
					t.Fatalf("coherent %v: after unpin %d: %v", coherent, i, err)
				}
			}
		}
		if st := m.Stats(); st.BytesRegistered != 0 || st.Misuses != 0 {
			t.Errorf("coherent %v: after the last unpin %d bytes registered, %d misuses: %v", coherent, st.BytesRegistered, st.Misuses, m.Errors())
		}
		if err := m.Unpin(bufs[1]); err == nil {
			t.Error("a second unpin of the prefix accepted")
		}
	}
}
