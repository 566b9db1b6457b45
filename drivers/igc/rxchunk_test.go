package igc

import (
	"bytes"
	"testing"
	"unsafe"

	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/iommu"
	"github.com/ether9/ether9/kernel/sim"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// chunkRing is a build-layout ring of n slots over simulated memory,
// armed, with the DMA address of each slot's frame.
func chunkRing(t *testing.T, n int) (*rxRing, *sim.Memory, []kernel.DMAAddr) {
	t.Helper()
	mem := sim.NewMemory()
	r, err := newRxRing(iommu.Passthrough(mem), n, 16)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.close(); err != nil {
			t.Error(err)
		}
	})
	if err := r.reset(Build); err != nil {
		t.Fatal(err)
	}
	addrs := make([]kernel.DMAAddr, n)
	r.refill(func(i int, a kernel.DMAAddr) { addrs[i] = a })
	return r, mem, addrs
}

// receive has the "device" write frame at the next slot and builds it.
func receive(t *testing.T, r *rxRing, mem *sim.Memory, addrs []kernel.DMAAddr, frame []byte) *stack.PacketBuffer {
	t.Helper()
	if err := mem.DeviceWrite(kernel.PhysAddr(addrs[r.clean]), frame); err != nil {
		t.Fatal(err)
	}
	armed := r.slots[r.clean].page.AsSlice()
	buf, err := r.build(len(frame))
	if err != nil {
		t.Fatal(err)
	}
	r.advance()
	pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buf})
	// The stack's first header read: it must land in the armed chunk.
	eth, ok := pkt.LinkHeader().Consume(header.EthernetMinimumSize)
	if !ok {
		pkt.DecRef()
		t.Fatal("link header consume failed")
	}
	if !bytes.Equal(eth, frame[:header.EthernetMinimumSize]) {
		t.Errorf("link header %x, want %x", eth, frame[:header.EthernetMinimumSize])
	}
	if got, want := unsafe.SliceData(eth), &armed[rxHeadroom]; got != want {
		t.Errorf("link header read at %p, the armed chunk's frame at %p: the header was copied", got, want)
	}
	return pkt
}

// TestBuildHeaderReadInPlace: a built packet's chunk is its own, so the
// stack's header pull-up reads the received bytes where the device wrote
// them, and a released chunk comes back under its old mapping.
func TestBuildHeaderReadInPlace(t *testing.T) {
	r, mem, addrs := chunkRing(t, 8)
	frame := udpTestFrame()
	for round := 0; round < 3; round++ {
		pkt := receive(t, r, mem, addrs, frame)
		if got := pkt.Data().AsRange().ToSlice(); !bytes.Equal(got, frame[header.EthernetMinimumSize:]) {
			t.Errorf("round %d: payload %x, want %x", round, got, frame[header.EthernetMinimumSize:])
		}
		pkt.DecRef()
		r.refill(func(i int, a kernel.DMAAddr) { addrs[i] = a })
	}
	if got := r.Stats.Handoffs.Load(); got != 3 {
		t.Errorf("handoffs %d, want 3", got)
	}
	if got := r.Chunks.Maps.Load(); got < 7 || got > 10 {
		t.Errorf("chunk maps %d, want the 7 armed and at most 3 more", got)
	}
	if got := len(r.chunks); got > maxMapped(len(r.slots)) {
		t.Errorf("%d chunks mapped, bound %d", got, maxMapped(len(r.slots)))
	}
}

// TestBuildHeldChunkNotRearmed: a chunk the stack still holds is never
// armed again, however many refills pass, and its contents stay.
func TestBuildHeldChunkNotRearmed(t *testing.T) {
	r, mem, addrs := chunkRing(t, 8)
	frame := udpTestFrame()
	pkt := receive(t, r, mem, addrs, frame)
	defer pkt.DecRef()
	for i := 0; i < 64; i++ {
		r.refill(func(i int, a kernel.DMAAddr) { addrs[i] = a })
		p := receive(t, r, mem, addrs, bytes.Repeat([]byte{0xee}, len(frame)))
		p.DecRef()
	}
	held := append(append([]byte(nil), pkt.LinkHeader().Slice()...), pkt.Data().AsRange().ToSlice()...)
	if !bytes.Equal(held, frame) {
		t.Errorf("held packet changed under the ring: %x", held)
	}
	if got := len(r.chunks); got > maxMapped(len(r.slots)) {
		t.Errorf("%d chunks mapped, bound %d", got, maxMapped(len(r.slots)))
	}
}

// TestRelayoutDropsChunks: leaving the build layout unmaps every chunk.
func TestRelayoutDropsChunks(t *testing.T) {
	r, mem, addrs := chunkRing(t, 8)
	receive(t, r, mem, addrs, udpTestFrame()).DecRef()
	if err := r.reset(Construct); err != nil {
		t.Fatal(err)
	}
	if len(r.chunks) != 0 {
		t.Errorf("%d chunk mappings kept after leaving build", len(r.chunks))
	}
	for i, s := range r.slots {
		if s.page != nil {
			t.Errorf("slot %d kept its chunk", i)
		}
	}
	if got, want := r.Stats.Unmaps.Load(), r.Stats.Maps.Load(); got != want {
		t.Errorf("%d unmaps for %d maps", got, want)
	}
}

func udpTestFrame() []byte {
	f := make([]byte, 60)
	copy(f, []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x08, 0x00})
	ip := f[14:]
	ip[0], ip[9] = 0x45, 17
	ip[3] = 46
	for i := 34; i < len(f); i++ {
		f[i] = byte(i)
	}
	return f
}
