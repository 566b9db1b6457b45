package ring

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/iommu"
	"github.com/ether9/ether9/kernel/sim"
	"gvisor.dev/gvisor/pkg/buffer"
)

// syncRig is a ring's DMA on the simulated machine's non-coherent memory
// with translation off: the device's writes reach the CPU only through
// SyncForCPU, and a device write to bytes synced for the CPU and not
// handed back with SyncForDevice is a recorded misuse.
type syncRig struct {
	mem   *sim.Memory
	dma   kernel.DMA
	armed map[int]kernel.DMAAddr // the address each descriptor was last armed with
}

func pathName(p Path) string {
	if p == Copied {
		return "copied"
	}
	return "handed up"
}

func newSyncRig() *syncRig {
	mem := sim.NewMemory()
	mem.SetCoherent(false)
	return &syncRig{mem: mem, dma: iommu.Passthrough(mem), armed: map[int]kernel.DMAAddr{}}
}

func (r *syncRig) write(i int, a kernel.DMAAddr) { r.armed[i] = a }

// deliver plays the device: frame k's bytes into the buffer armed at i.
func (r *syncRig) deliver(t *testing.T, i, n, k int) []byte {
	t.Helper()
	want := pattern(n, byte(k))
	if err := r.mem.DeviceWrite(kernel.PhysAddr(r.armed[i]), want); err != nil {
		t.Fatalf("frame %d: device write at %#x: %v", k, r.armed[i], err)
	}
	return want
}

// check fails on any DMA API misuse the memory saw.
func (r *syncRig) check(t *testing.T, what string) {
	t.Helper()
	if errs := r.mem.Errors(); len(errs) != 0 {
		t.Fatalf("%s: %d DMA API misuses, first %v", what, r.mem.Stats().Misuses, errs[0])
	}
}

// checkClosed checks that the ring's Close left nothing pinned.
func (r *syncRig) checkClosed(t *testing.T) {
	t.Helper()
	if st := r.mem.Stats(); st.Pins != st.Unpins || st.BytesRegistered != 0 {
		t.Errorf("after close: %d pins, %d unpins, %d bytes registered", st.Pins, st.Unpins, st.BytesRegistered)
	}
}

// TestRxRingSyncsNonCoherent runs frames around a ring several times on
// non-coherent memory, copied and handed up, in both modes: every frame
// reads back as the device wrote it (fails without the SyncForCPU before
// a copy or a handoff) and the device never writes a buffer the CPU still
// owns (fails without the SyncForDevice before a copied frame's buffer is
// re-armed).
func TestRxRingSyncsNonCoherent(t *testing.T) {
	const ringSize, frames = 8, 40
	for _, mode := range []Mode{SyncNoUnmap, UnmapAlways} {
		for _, cb := range []int{0, 256, bufSize} {
			t.Run(fmt.Sprintf("%v/cb=%d", mode, cb), func(t *testing.T) {
				rig := newSyncRig()
				r, err := NewRxRing(rig.dma, ringSize, 16, bufSize)
				if err != nil {
					t.Fatal(err)
				}
				r.SetMode(mode)
				r.SetCopybreak(cb)
				r.Refill(rig.write)
				for k := range frames {
					// Short and long frames in turn, so cb=256 takes both
					// paths on the same buffers.
					n := 60 + k%3*700
					i := r.Clean()
					want := rig.deliver(t, i, n, k)
					got, path, err := r.Receive(n)
					if err != nil {
						t.Fatalf("frame %d: %v", k, err)
					}
					if wantPath := n < cb; (path == Copied) != wantPath {
						t.Errorf("frame %d of %d bytes %s with copybreak %d", k, n, pathName(path), cb)
					}
					if !bytes.Equal(got.Flatten(), want) {
						t.Fatalf("frame %d (%d bytes, %s, descriptor %d): the CPU does not see what the device wrote", k, n, pathName(path), i)
					}
					got.Release()
					r.Advance()
					r.Refill(rig.write)
					rig.check(t, fmt.Sprintf("after frame %d (%s, descriptor %d)", k, pathName(path), i))
				}
				if err := r.Close(); err != nil {
					t.Fatal(err)
				}
				rig.checkClosed(t)
			})
		}
	}
}

// TestPageRxRingSyncsNonCoherent does the same for half-page buffers:
// frames copied, handed up and released (the slot flips), handed up and
// held (the page is given up), and looked at with Peek and kept. Each
// frame reads back as written (fails without the SyncForCPU in Receive or
// Peek) and no half is written by the device while the CPU owns it (fails
// without the SyncForDevice when a kept half is re-armed).
func TestPageRxRingSyncsNonCoherent(t *testing.T) {
	const ringSize, frames = 8, 64
	rig := newSyncRig()
	r, err := NewPageRxRing(rig.dma, ringSize, 16)
	if err != nil {
		t.Fatal(err)
	}
	r.SetCopybreak(256)
	r.Refill(rig.write)
	var held []buffer.Buffer
	for k := range frames {
		i := r.Clean()
		n := []int{60, 1000, 1514, 300}[k%4]
		want := rig.deliver(t, i, n, k)
		what := fmt.Sprintf("frame %d (%d bytes, descriptor %d)", k, n, i)
		if k%5 == 2 {
			b, err := r.Peek(n)
			if err != nil {
				t.Fatalf("%s: peek: %v", what, err)
			}
			if !bytes.Equal(b, want) {
				t.Fatalf("%s: Peek does not see what the device wrote", what)
			}
			r.Keep(n)
		} else {
			got, path, err := r.Receive(n)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if !bytes.Equal(got.Flatten(), want) {
				t.Fatalf("%s, %s: the CPU does not see what the device wrote", what, pathName(path))
			}
			if path == Handoff && k%7 == 3 {
				held = append(held, got) // the stack keeps it: the page goes
			} else {
				got.Release()
			}
		}
		r.Advance()
		r.Refill(rig.write)
		rig.check(t, "after "+what)
	}
	if r.Pages.Flips.Load() == 0 || r.Pages.Released.Load() == 0 || r.Stats.Copybreak.Load() == 0 || r.Stats.Recycled.Load() == 0 {
		t.Errorf("not every path taken: flips %d, pages released %d, copied %d, kept %d",
			r.Pages.Flips.Load(), r.Pages.Released.Load(), r.Stats.Copybreak.Load(), r.Stats.Recycled.Load())
	}
	for _, b := range held {
		b.Release()
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	rig.checkClosed(t)
}
