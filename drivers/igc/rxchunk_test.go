package igc

import (
	"bytes"
	"testing"
	"unsafe"

	"github.com/ether9/ether9/drivers/adv"
	"github.com/ether9/ether9/drivers/internal/nictest"
	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/iommu"
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/netstack"
	"gvisor.dev/gvisor/pkg/tcpip"
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
	return receiveOffering(t, r, mem, addrs, frame, false)
}

// receiveOffering is receive whose packet, if offer, offers its first
// view back through the ring's recycle hook on release, as the netstack
// endpoint does.
func receiveOffering(t *testing.T, r *rxRing, mem *sim.Memory, addrs []kernel.DMAAddr, frame []byte, offer bool) *stack.PacketBuffer {
	t.Helper()
	if err := mem.DeviceWrite(kernel.PhysAddr(addrs[r.Clean()]), frame); err != nil {
		t.Fatal(err)
	}
	armed := r.slots[r.Clean()].Page.AsSlice()
	buf, recycle, err := r.build(len(frame))
	if err != nil {
		t.Fatal(err)
	}
	if recycle == nil {
		t.Fatal("a chunk went up without its recycle hook")
	}
	r.Advance()
	opts := stack.PacketBufferOptions{Payload: buf}
	var pkt *stack.PacketBuffer
	if offer {
		opts.OnRelease = func() {
			vl, _ := pkt.AsViewList()
			recycle(vl.Front())
		}
	}
	pkt = stack.NewPacketBuffer(opts)
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
	r.publish()
	if got := r.Stats.Handoffs.Load(); got != 3 {
		t.Errorf("handoffs %d, want 3", got)
	}
	if got := r.Chunks.Maps.Load(); got < 7 || got > 10 {
		t.Errorf("chunk maps %d, want the 7 armed and at most 3 more", got)
	}
	if got := r.chunks.len(); got > maxMapped(len(r.slots)) {
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
	if got := r.chunks.len(); got > maxMapped(len(r.slots)) {
		t.Errorf("%d chunks mapped, bound %d", got, maxMapped(len(r.slots)))
	}
}

// TestBuildChunkReturns: a packet released with its chunk's only view
// gives the chunk back; the next refill re-arms that very chunk under its
// mapping, without the pool (so without its clear), and the stack still
// reads the next frame in place.
func TestBuildChunkReturns(t *testing.T) {
	r, mem, addrs := chunkRing(t, 8)
	frame := udpTestFrame()
	for round := 0; round < 20; round++ {
		slot := r.Clean()
		chunk := unsafe.SliceData(r.slots[slot].Page.AsSlice())
		pkt := receiveOffering(t, r, mem, addrs, frame, true)
		pkt.DecRef()
		r.refill(func(i int, a kernel.DMAAddr) { addrs[i] = a })
		if got := unsafe.SliceData(r.slots[(slot+7)%8].Page.AsSlice()); got != chunk {
			t.Fatalf("round %d: refill armed chunk %p, want the returned %p", round, got, chunk)
		}
		if round >= 7 { // the ring has come round: every slot's content is a past frame
			want := bytes.Repeat([]byte{0}, len(frame))
			copy(want, frame)
			if got := r.slots[(slot+7)%8].Page.AsSlice()[rxHeadroom : rxHeadroom+len(frame)]; !bytes.Equal(got, want) {
				t.Fatalf("round %d: returned chunk holds %x", round, got)
			}
		}
	}
	r.publish()
	if got := r.Chunks.Returns.Load(); got != 20 {
		t.Errorf("returns %d, want 20", got)
	}
	if got := r.Chunks.Maps.Load(); got != 7 {
		t.Errorf("chunk maps %d, want the 7 first armed", got)
	}
	if got := r.Chunks.Reuses.Load() + r.Chunks.Refused.Load(); got != 0 {
		t.Errorf("%d chunks came from the pool or were refused, want none", got)
	}
}

// TestBuildReturnsInOrder: chunks come back into the slots in the order
// they went up, so slots armed in a row keep chunks mapped in a row.
func TestBuildReturnsInOrder(t *testing.T) {
	r, mem, addrs := chunkRing(t, 8)
	var up []*byte
	for i := 0; i < 4; i++ {
		up = append(up, unsafe.SliceData(r.slots[r.Clean()].Page.AsSlice()))
		receiveOffering(t, r, mem, addrs, udpTestFrame(), true).DecRef()
	}
	first := r.Tail()
	r.refill(func(i int, a kernel.DMAAddr) { addrs[i] = a })
	for k, want := range up {
		if got := unsafe.SliceData(r.slots[(first+k)%8].Page.AsSlice()); got != want {
			t.Errorf("slot %d armed with chunk %p, want %p, the %d. handed up", (first+k)%8, got, want, k+1)
		}
	}
}

// TestBuildReturnRefusedWhileShared: a packet whose chunk a clone still
// holds (a second socket, a sniffer) does not give it back; the clone's
// bytes stay as received however many frames follow.
func TestBuildReturnRefusedWhileShared(t *testing.T) {
	r, mem, addrs := chunkRing(t, 8)
	frame := udpTestFrame()
	pkt := receiveOffering(t, r, mem, addrs, frame, true)
	clone := pkt.Clone()
	defer clone.DecRef()
	pkt.DecRef()
	if got := r.Chunks.Refused.Load(); got != 1 {
		t.Fatalf("refused %d, want 1", got)
	}
	for i := 0; i < 64; i++ {
		r.refill(func(i int, a kernel.DMAAddr) { addrs[i] = a })
		receiveOffering(t, r, mem, addrs, bytes.Repeat([]byte{0xee}, len(frame)), true).DecRef()
	}
	held := append(append([]byte(nil), clone.LinkHeader().Slice()...), clone.Data().AsRange().ToSlice()...)
	if !bytes.Equal(held, frame) {
		t.Errorf("cloned packet changed under the ring: %x", held)
	}
}

// TestBuildReturnAfterClose: a packet the stack releases after the ring
// closed is refused, and closing left nothing mapped.
func TestBuildReturnAfterClose(t *testing.T) {
	mem := sim.NewMemory()
	r, err := newRxRing(iommu.Passthrough(mem), 8, 16)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.reset(Build); err != nil {
		t.Fatal(err)
	}
	addrs := make([]kernel.DMAAddr, 8)
	r.refill(func(i int, a kernel.DMAAddr) { addrs[i] = a })
	held := receiveOffering(t, r, mem, addrs, udpTestFrame(), true)
	receiveOffering(t, r, mem, addrs, udpTestFrame(), true).DecRef() // on the list
	if err := r.close(); err != nil {
		t.Fatal(err)
	}
	held.DecRef()
	if got := r.Chunks.Refused.Load(); got != 1 {
		t.Errorf("refused %d after close, want 1", got)
	}
	if got, want := r.Stats.Unmaps.Load(), r.Stats.Maps.Load(); got != want {
		t.Errorf("%d unmaps for %d maps", got, want)
	}
	if st := mem.Stats(); st.Pins != st.Unpins {
		t.Errorf("%d pins, %d unpins", st.Pins, st.Unpins)
	}
}

// TestRelayoutDropsChunks: leaving the build layout unmaps every chunk.
func TestRelayoutDropsChunks(t *testing.T) {
	r, mem, addrs := chunkRing(t, 8)
	receive(t, r, mem, addrs, udpTestFrame()).DecRef()
	if err := r.reset(Construct); err != nil {
		t.Fatal(err)
	}
	if r.chunks.len() != 0 {
		t.Errorf("%d chunk mappings kept after leaving build", r.chunks.len())
	}
	for i, s := range r.slots {
		if s.Page != nil {
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

// endpointHolder is the dispatcher behind the netstack endpoint: it
// hands each packet to the held-packet check under a reference of its
// own, which the check drops within delivery, on another goroutine, or
// after the ring has received several rings' worth more.
type endpointHolder struct {
	got func(nictest.Packet)
	n   int
}

func (h *endpointHolder) DeliverNetworkPacket(_ tcpip.NetworkProtocolNumber, pkt *stack.PacketBuffer) {
	h.n++
	pkt.IncRef()
	h.got(nictest.Packet{Bytes: func() []byte { return pkt.Data().AsRange().ToSlice() }, Release: pkt.DecRef})
}

func (h *endpointHolder) DeliverLinkPacket(tcpip.NetworkProtocolNumber, *stack.PacketBuffer) {}

// TestBuildReturnsThroughEndpoint: built packets go through the netstack
// endpoint, most released within delivery, some held and released on
// another goroutine while the ring keeps receiving, some held while it
// receives several rings' worth more. Every chunk comes back (none is
// refused as shared) but those whose mapping was evicted meanwhile, no
// held packet's bytes change while later frames are received into
// returned chunks, and the endpoint's offers, lent again as their
// packets go, never offer one packet's view for another.
func TestBuildReturnsThroughEndpoint(t *testing.T) {
	r := newRig(t)
	if err := r.d.Ctl("build auto"); err != nil {
		t.Fatal(err)
	}
	r.RestartRx(0)
	ep, err := netstack.New(r.d, netstack.Options{Manual: true})
	if err != nil {
		t.Fatal(err)
	}
	h := &endpointHolder{}
	ep.Attach(h)
	nictest.HeldRx{
		Ring: rxDescs,
		Send: func(t testing.TB, f []byte) bool {
			return r.Deliver(t, 0, f, adv.RXD_STAT_EOP|adv.RXD_STAT_UDPCS, rssHash)
		},
		Receive: func(t testing.TB, budget int, got func(nictest.Packet)) int {
			h.got = got
			n, err := ep.Poll(0, budget)
			if err != nil {
				t.Fatalf("endpoint poll: %v", err)
			}
			return n
		},
		Frame: func(i int) []byte { return heldFrame(60, i) },
		Want:  func(i int) []byte { return heldFrame(60, i)[header.EthernetMinimumSize:] },
		Close: func(t testing.TB) {
			rx := r.d.queues[0].rx
			if got := rx.Chunks.Refused.Load(); got != 0 {
				t.Errorf("%d chunks refused, want every packet's chunk back", got)
			}
			// Chunks re-armed from the returns and those still listed are
			// every packet's, less those whose mapping was evicted while
			// the stack held them (the held packets outnumber the
			// mappings the ring keeps), which are let go when they come
			// back: each packet was its chunk's only holder at release.
			listed := 0
			for m := rx.returns.taken; m != nil; m = m.next {
				listed++
			}
			for m := rx.returns.head.Load(); m != nil; m = m.next {
				listed++
			}
			back, evicted := rx.Chunks.Returns.Load()+uint64(listed), rx.Chunks.Evicted.Load()
			if back > uint64(h.n) || back+evicted < uint64(h.n) {
				t.Errorf("returns %d + listed %d = %d of %d packets' chunks, %d mappings evicted", rx.Chunks.Returns.Load(), listed, back, h.n, evicted)
			}
			ep.Close()
			if n := r.DMA.Live(); n != 0 {
				t.Errorf("%d DMA mappings left after close", n)
			}
		},
	}.Check(t)
}
