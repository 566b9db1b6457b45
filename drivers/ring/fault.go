package ring

import (
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/kernel"
)

// FaultCounter is an optional capability of a kernel.DMA view: the
// number of DMA faults the IOMMU recorded for the device so far.
type FaultCounter interface {
	DMAFaults() uint64
}

// FaultGuard is the receive side's DMA-fault rule, the same for every
// driver: a NIC marks a descriptor done even when the IOMMU refused its
// write of the frame, so the frames of a poll during which the device's
// fault count moved are all dropped. Any of them may hold what the
// buffer had before, not what the wire carried, and the fault record
// does not say which. A fault seen in a poll with no frames stays
// pending for the next frames: the device may record the fault before it
// writes the descriptor back. A driver's Receive applies it as its last
// step over the frames it filled; only the goroutine receiving on the
// queue uses it.
type FaultGuard struct {
	fc     FaultCounter // nil: the view counts no faults, every frame passes
	faults uint64       // the count the last frames were judged against
	name   string       // "ether0 q1", for the log
	logf   func(format string, args ...any)
}

// NewFaultGuard returns the guard of a queue whose device does its DMA
// through dma. Faults recorded before it count for nothing.
func NewFaultGuard(dma kernel.DMA, name string, logf func(format string, args ...any)) FaultGuard {
	g := FaultGuard{name: name, logf: logf}
	if fc, ok := dma.(FaultCounter); ok {
		g.fc, g.faults = fc, fc.DMAFaults()
	}
	return g
}

// Counter is the view's fault counter, nil when it counts none.
func (g *FaultGuard) Counter() FaultCounter { return g.fc }

// Check judges pkts, the frames of one poll, against the fault count
// read now, after their descriptors were: it returns how many of them to
// deliver, all or none.
func (g *FaultGuard) Check(pkts []nic.RxPacket, st *RxStats) int {
	if g.fc == nil || len(pkts) == 0 {
		return len(pkts)
	}
	return g.Judge(g.fc.DMAFaults(), pkts, st)
}

// Judge is Check against faults, a count the caller read after the
// descriptors (e1000e leaves out the faults its transmit path took as
// its own). A count below the last one judged against, faults so left
// out after the drop that answered them, becomes the new base. Dropped
// frames have their data released, their slots cleared, and are counted
// in st as DropDMA.
func (g *FaultGuard) Judge(faults uint64, pkts []nic.RxPacket, st *RxStats) int {
	if faults < g.faults {
		g.faults = faults
	}
	if faults == g.faults || len(pkts) == 0 {
		return len(pkts)
	}
	if g.logf != nil {
		g.logf("%s: rx: dma fault: dropped %d frames (faults %d, were %d)", g.name, len(pkts), faults, g.faults)
	}
	g.faults = faults
	for i := range pkts {
		pkts[i].Data.Release()
		st.Drop(DropDMA)
	}
	clear(pkts)
	return 0
}
