// Package nicstat gathers the statistics of the Intel gigabit MACs: the
// read-to-clear counter registers they share, accumulated into running
// totals, and per-queue driver counters summed into one list.
package nicstat

import (
	"fmt"
	"slices"
	"sync"

	"github.com/ether9/ether9/kernel"
)

// Counter is one statistics register; Hi is the upper half of a 64-bit
// counter (read after Lo, which latches it), 0 for 32-bit ones.
type Counter struct {
	Name   string
	Lo, Hi uint32
}

// common lists the counters in the order they are reported.
var common = [...]Counter{
	{"crc_errors", CRCERRS, 0},
	{"alignment_errors", ALGNERRC, 0},
	{"symbol_errors", SYMERRS, 0},
	{"rx_errors", RXERRC, 0},
	{"missed_packets", MPC, 0},
	{"single_collisions", SCC, 0},
	{"excessive_collisions", ECOL, 0},
	{"multiple_collisions", MCC, 0},
	{"late_collisions", LATECOL, 0},
	{"collisions", COLC, 0},
	{"defer_count", DC, 0},
	{"sequence_errors", SEC, 0},
	{"rx_length_errors", RLEC, 0},
	{"xon_rx", XONRXC, 0},
	{"xon_tx", XONTXC, 0},
	{"xoff_rx", XOFFRXC, 0},
	{"xoff_tx", XOFFTXC, 0},
	{"good_packets_rx", GPRC, 0},
	{"broadcast_rx", BPRC, 0},
	{"multicast_rx", MPRC, 0},
	{"good_packets_tx", GPTC, 0},
	{"good_octets_rx", GORCL, GORCH},
	{"good_octets_tx", GOTCL, GOTCH},
	{"rx_no_buffers", RNBC, 0},
	{"rx_undersize", RUC, 0},
	{"rx_fragments", RFC, 0},
	{"rx_oversize", ROC, 0},
	{"rx_jabbers", RJC, 0},
	{"total_octets_rx", TORL, TORH},
	{"total_octets_tx", TOTL, TOTH},
	{"total_packets_rx", TPR, 0},
	{"total_packets_tx", TPT, 0},
	{"multicast_tx", MPTC, 0},
	{"broadcast_tx", BPTC, 0},
	{"tso_contexts_tx", TSCTC, 0},
	{"tso_context_failures", TSCTFC, 0},
}

// Table returns the counters a family reports: the common set less those
// whose low register is in absent (a family that lacks them).
func Table(absent ...uint32) []Counter {
	t := make([]Counter, 0, len(common))
	for _, c := range common {
		if !slices.Contains(absent, c.Lo) {
			t = append(t, c)
		}
	}
	return t
}

// Hardware accumulates the device counters, which clear when read, and
// any per-queue drop counters. Its zero value is ready for Init.
type Hardware struct {
	mu    sync.Mutex
	table []Counter
	acc   []uint64
	qregs []uint32 // per-queue drop count registers
	qdrop []uint64
}

// Init sets the counters to gather and the per-queue drop registers.
func (h *Hardware) Init(table []Counter, qdrop ...uint32) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.table = table
	h.acc = make([]uint64, len(table))
	h.qregs = qdrop
	h.qdrop = make([]uint64, len(qdrop))
}

// Gather reads (and so clears) every counter into the totals.
func (h *Hardware) Gather(r kernel.Regs) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, c := range h.table {
		v := uint64(r.Read32(c.Lo))
		if c.Hi != 0 {
			v |= uint64(r.Read32(c.Hi)) << 32
		}
		h.acc[i] += v
	}
	for i, q := range h.qregs {
		h.qdrop[i] += uint64(r.Read32(q))
	}
}

// Each passes the totals to fn: the device counters in table order, then
// each queue's drops as q<n>_rx_drops.
func (h *Hardware) Each(fn func(name string, v uint64)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, c := range h.table {
		fn(c.Name, h.acc[i])
	}
	for i, v := range h.qdrop {
		fn(QueueName(i, "rx_drops"), v)
	}
}

// Sum adds up counters of the same name from several queues, keeping the
// order in which names first appeared. Its zero value is ready to use.
type Sum struct {
	order []string
	total map[string]uint64
}

// Add adds v to name's total.
func (s *Sum) Add(name string, v uint64) {
	if s.total == nil {
		s.total = make(map[string]uint64)
	}
	if _, ok := s.total[name]; !ok {
		s.order = append(s.order, name)
	}
	s.total[name] += v
}

// Each passes each total to fn in first-seen order.
func (s *Sum) Each(fn func(name string, v uint64)) {
	for _, name := range s.order {
		fn(name, s.total[name])
	}
}

// QueueName names queue i's counter: q<i>_<name>.
func QueueName(i int, name string) string { return fmt.Sprintf("q%d_%s", i, name) }
