package iommu

import (
	"fmt"
	"strings"
)

// Stats are the unit's counters.
type Stats struct {
	Maps, Unmaps uint64

	// IOTLB invalidations by granularity, and context-cache ones.
	PageInvalidations    uint64
	DomainInvalidations  uint64
	GlobalInvalidations  uint64
	ContextInvalidations uint64
	RefusedInvalidations uint64 // requests the unit answered with IAIG=0
	// QueuedSubmissions counts batches of descriptors the invalidation
	// queue carried out, each ended by a wait (0 without the queue).
	QueuedSubmissions uint64

	InterruptEntries int // interrupt remapping entries in use

	Faults          uint64 // fault records read
	InterruptFaults uint64 // of them blocked interrupts
	FaultOverflows  uint64 // times FSTS.PFO said records were lost
	FaultEvents     uint64 // fault event interrupts handled (SignalFaults)

	Domains      int
	TablePages   int64 // root, context and page-table pages
	MappedPages  int64 // 4 KiB pages translated (a 2 MiB leaf counts 512)
	Pending      int   // deferred unmaps awaiting their invalidation
	IOVAInUse    uint64
	Mode         Mode
	DeferredSize int
}

// Invalidations is the total of IOTLB invalidations.
func (s Stats) Invalidations() uint64 {
	return s.PageInvalidations + s.DomainInvalidations + s.GlobalInvalidations
}

func (s *Stats) count(k invKind) {
	switch k {
	case invPage:
		s.PageInvalidations++
	case invDomain:
		s.DomainInvalidations++
	case invGlobal:
		s.GlobalInvalidations++
	}
}

// String renders the counters one per line, as /dev/iommu/stats shows them.
func (s Stats) String() string {
	var b strings.Builder
	line := func(k string, v any) { fmt.Fprintf(&b, "%s %v\n", k, v) }
	line("mode", s.Mode)
	line("batch", s.DeferredSize)
	line("maps", s.Maps)
	line("unmaps", s.Unmaps)
	line("inv-page", s.PageInvalidations)
	line("inv-domain", s.DomainInvalidations)
	line("inv-global", s.GlobalInvalidations)
	line("inv-context", s.ContextInvalidations)
	line("inv-refused", s.RefusedInvalidations)
	line("inv-queued", s.QueuedSubmissions)
	line("irq-entries", s.InterruptEntries)
	line("faults", s.Faults)
	line("irq-faults", s.InterruptFaults)
	line("fault-overflows", s.FaultOverflows)
	line("fault-events", s.FaultEvents)
	line("domains", s.Domains)
	line("table-pages", s.TablePages)
	line("mapped-pages", s.MappedPages)
	line("pending", s.Pending)
	line("iova-bytes", s.IOVAInUse)
	return b.String()
}

// Stats returns a snapshot of the counters. It polls the fault registers
// first so that the fault count is current.
func (u *Unit) Stats() Stats {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.pollFaults()
	s := u.stats
	s.Domains = len(u.domains)
	s.TablePages = u.tm.pages
	s.Pending = len(u.inv.pending)
	s.Mode, s.DeferredSize = u.inv.mode, u.inv.batch
	if u.qi != nil {
		s.QueuedSubmissions = u.qi.done
	}
	for _, d := range u.domains {
		s.MappedPages += d.pt.mapped
		s.IOVAInUse += d.iova.used
	}
	return s
}
