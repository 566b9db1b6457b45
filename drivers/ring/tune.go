package ring

import (
	"fmt"
	"slices"
	"time"

	"github.com/ether9/ether9/kernel"
	"gvisor.dev/gvisor/pkg/buffer"
)

// CopybreakCosts is what the two ways of taking a received frame cost on
// this machine, measured through a device's own DMA view (its IOMMU
// domain, mode and platform), in SyncNoUnmap mode:
//
//   - copying: sync the frame for the CPU, copy it into a fresh view,
//     sync the buffer back for the device (it stays mapped);
//   - handing off: sync the frame for the CPU, unmap the buffer (in strict
//     mode an IOTLB invalidation), allocate a new one and map it.
//
// The first grows with the frame; the second does not. Which is cheaper
// depends on the machine (an invalidation takes 0.2 us on one IOMMU and
// 5 on another, pinning memory for a map costs a system call on the
// Linux platform), so the threshold is measured, not guessed.
type CopybreakCosts struct {
	Handoff time.Duration // per frame
	Copy    []SizeCost    // per frame, by frame size
	// Copybreak is the length below which copying is cheaper, from a
	// straight line fitted through Copy; 0..BufSize.
	Copybreak int
}

// SizeCost is the cost of copying a frame of Size bytes.
type SizeCost struct {
	Size int
	Cost time.Duration
}

// copySizes are the frame sizes whose copy is timed: a minimal frame, a
// small packet, and up to the largest standard frame and the buffer.
var copySizes = []int{64, 256, 512, 1024, 1514}

// Measurement effort: rounds of batch operations per figure, the median
// round kept, so that a preemption or a GC in one round does not decide.
const (
	tuneRounds = 7
	tuneBatch  = 32
)

// MeasureCopybreak times both ways of taking a frame of a bufSize buffer
// through dma and picks the copybreak. Nothing it maps outlives the call;
// the device is never given the buffers' addresses.
func MeasureCopybreak(dma kernel.DMA, bufSize int) (CopybreakCosts, error) {
	var c CopybreakCosts
	batch, err := newHandoffBatch(dma, bufSize)
	if err != nil {
		return c, err
	}
	handoff, err := medianRound(batch.round)
	batch.release()
	if err != nil {
		return c, err
	}
	c.Handoff = handoff
	src := buffer.NewViewSize(bufSize)
	defer src.Release()
	addr, err := dma.Map(src.AsSlice(), kernel.FromDevice)
	if err != nil {
		return c, fmt.Errorf("ring: copybreak: map: %w", err)
	}
	defer dma.Unmap(addr, bufSize, kernel.FromDevice)
	for _, n := range append(slices.Clone(copySizes), bufSize) {
		if n > bufSize {
			continue
		}
		cost, err := medianRound(func() (time.Duration, error) { return timeCopies(dma, src, addr, n) })
		if err != nil {
			return c, err
		}
		c.Copy = append(c.Copy, SizeCost{n, cost})
	}
	c.Copybreak = breakEven(c.Copy, c.Handoff, bufSize)
	return c, nil
}

// handoffBatch is tuneBatch buffers mapped for the device, as a ring's
// would be. A timed round hands each one off and leaves its replacement
// mapped in its place, so the batch is mapped once for every round and
// unmapped once after them: set-up and tear-down outside the timing cost
// as much IOMMU work as a round (a QEMU boot spent 25 ms measuring, half
// of it there).
type handoffBatch struct {
	dma     kernel.DMA
	bufSize int
	views   []*buffer.View
	addrs   []kernel.DMAAddr
	mapped  []bool
}

func newHandoffBatch(dma kernel.DMA, bufSize int) (*handoffBatch, error) {
	b := &handoffBatch{
		dma: dma, bufSize: bufSize,
		views:  make([]*buffer.View, tuneBatch),
		addrs:  make([]kernel.DMAAddr, tuneBatch),
		mapped: make([]bool, tuneBatch),
	}
	for i := range b.views {
		b.views[i] = buffer.NewViewSize(bufSize)
		a, err := dma.Map(b.views[i].AsSlice(), kernel.FromDevice)
		if err != nil {
			b.release()
			return nil, fmt.Errorf("ring: copybreak: map: %w", err)
		}
		b.addrs[i], b.mapped[i] = a, true
	}
	return b, nil
}

// round returns the cost of one handoff, averaged over the batch: sync
// for the CPU, unmap, the stack's release of the handed-up frame, a new
// buffer and its map.
func (b *handoffBatch) round() (time.Duration, error) {
	var errs error
	start := time.Now()
	for i := range b.views {
		if err := b.dma.SyncForCPU(b.addrs[i], b.bufSize, kernel.FromDevice); err != nil && errs == nil {
			errs = err
		}
		if err := b.dma.Unmap(b.addrs[i], b.bufSize, kernel.FromDevice); err != nil && errs == nil {
			errs = err
		}
		b.mapped[i] = false
		b.views[i].Release()
		b.views[i] = buffer.NewViewSize(b.bufSize)
		a, err := b.dma.Map(b.views[i].AsSlice(), kernel.FromDevice)
		if err != nil {
			errs = err
			continue
		}
		b.addrs[i], b.mapped[i] = a, true
	}
	took := time.Since(start)
	if errs != nil {
		return 0, fmt.Errorf("ring: copybreak: handoff: %w", errs)
	}
	return took / tuneBatch, nil
}

// release unmaps and frees what the batch holds.
func (b *handoffBatch) release() {
	for i, v := range b.views {
		if v == nil {
			continue
		}
		if b.mapped[i] {
			b.dma.Unmap(b.addrs[i], b.bufSize, kernel.FromDevice)
			b.mapped[i] = false
		}
		v.Release()
		b.views[i] = nil
	}
}

// timeCopies returns the cost of copying n bytes out of the mapped
// buffer src, averaged over a batch.
func timeCopies(dma kernel.DMA, src *buffer.View, addr kernel.DMAAddr, n int) (time.Duration, error) {
	start := time.Now()
	for i := 0; i < tuneBatch; i++ {
		if err := dma.SyncForCPU(addr, n, kernel.FromDevice); err != nil {
			return 0, fmt.Errorf("ring: copybreak: sync for cpu: %w", err)
		}
		v := buffer.NewViewWithData(src.AsSlice()[:n])
		if err := dma.SyncForDevice(addr, n, kernel.FromDevice); err != nil {
			v.Release()
			return 0, fmt.Errorf("ring: copybreak: sync for device: %w", err)
		}
		v.Release()
	}
	return time.Since(start) / tuneBatch, nil
}

func medianRound(round func() (time.Duration, error)) (time.Duration, error) {
	ds := make([]time.Duration, 0, tuneRounds)
	for i := 0; i < tuneRounds; i++ {
		d, err := round()
		if err != nil {
			return 0, err
		}
		ds = append(ds, d)
	}
	slices.Sort(ds)
	return ds[len(ds)/2], nil
}

// breakEven fits cost = a + b*size through the copy costs (least
// squares) and returns the size at which copying costs as much as a
// handoff, within 0..max. A copy that costs no more at max copies every
// frame; one that costs more even at size 0 copies none.
func breakEven(copies []SizeCost, handoff time.Duration, max int) int {
	if len(copies) == 0 {
		return 0
	}
	var sx, sy, sxx, sxy float64
	for _, c := range copies {
		x, y := float64(c.Size), float64(c.Cost)
		sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	n := float64(len(copies))
	var a, b float64
	if d := n*sxx - sx*sx; d != 0 {
		b = (n*sxy - sx*sy) / d
	}
	a = (sy - b*sx) / n
	h := float64(handoff)
	switch {
	case a+b*float64(max) <= h:
		return max
	case b <= 0:
		// Flat or falling: noise around a constant that exceeds h.
		return 0
	}
	return min(max, int(max0((h-a)/b)))
}

func max0(x float64) float64 {
	if x < 0 {
		return 0
	}
	return x
}
