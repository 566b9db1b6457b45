package xsk

import (
	"fmt"

	"github.com/ether9/ether9/kernel"
)

// zcRing is the RX buffer side of a queue held in zero-copy mode: each
// descriptor is armed with a frame of the socket's area, taken from its
// fill ring. It shares the descriptors with the driver's own ring, which
// it replaces while the socket is bound.
type zcRing struct {
	dma    kernel.DMA
	umem   *Umem
	sock   *Socket
	base   kernel.DMAAddr // device address of the frame area
	frames []uint64       // frame address+1 per descriptor, 0: none
	clean  int
	next   int
	armed  int
}

// refill arms free descriptors with their own frame or a new one from the
// fill ring; it reports whether the tail moved.
func (z *zcRing) refill(write func(int, kernel.DMAAddr)) bool {
	moved := false
	fs := z.umem.FrameSize
	for z.armed < len(z.frames)-1 {
		i := z.next
		if z.frames[i] == 0 {
			a, ok := z.umem.Fill.Consume()
			if !ok {
				break
			}
			if a%uint64(fs) != 0 || z.umem.Check(a, fs) != nil {
				z.sock.Stats.RxInvalid.Add(1)
				continue
			}
			z.frames[i] = a + 1
		}
		addr := z.base + kernel.DMAAddr(z.frames[i]-1)
		if err := z.dma.SyncForDevice(addr, fs, kernel.Bidirectional); err != nil {
			break
		}
		write(i, addr)
		z.next = (i + 1) % len(z.frames)
		z.armed++
		moved = true
	}
	return moved
}

// frame is the address of the frame at clean.
func (z *zcRing) frame() uint64 { return z.frames[z.clean] - 1 }

// take hands the frame at clean to the application.
func (z *zcRing) take() { z.frames[z.clean] = 0 }

// peek syncs and returns the n received bytes of the frame at clean.
func (z *zcRing) peek(n int) ([]byte, error) {
	if z.frames[z.clean] == 0 {
		return nil, fmt.Errorf("rx descriptor %d completed with no frame", z.clean)
	}
	if n <= 0 || n > z.umem.FrameSize {
		return nil, fmt.Errorf("rx length %d outside 1..%d", n, z.umem.FrameSize)
	}
	a := z.frame()
	if err := z.dma.SyncForCPU(z.base+kernel.DMAAddr(a), n, kernel.Bidirectional); err != nil {
		return nil, err
	}
	return z.umem.Bytes(a, n), nil
}
