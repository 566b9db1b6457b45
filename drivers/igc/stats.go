package igc

import (
	"fmt"
	"sync"

	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/xsk"
)

// hwCounter is one statistics register; hi is the upper half of a 64-bit
// counter (read after lo), 0 for 32-bit ones.
type hwCounter struct {
	name   string
	lo, hi uint32
}

// hwCounters are clear-on-read; the driver accumulates them.
var hwCounters = []hwCounter{
	{"crc_errors", CRCERRS, 0},
	{"alignment_errors", ALGNERRC, 0},
	{"rx_errors", RXERRC, 0},
	{"missed_packets", MPC, 0},
	{"single_collisions", SCC, 0},
	{"excessive_collisions", ECOL, 0},
	{"multiple_collisions", MCC, 0},
	{"late_collisions", LATECOL, 0},
	{"collisions", COLC, 0},
	{"defer_count", DC, 0},
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
}

// hwStats accumulates the device counters.
type hwStats struct {
	mu    sync.Mutex
	acc   []uint64
	qdrop []uint64 // RQDPC per queue
}

func (h *hwStats) init(queues int) {
	h.acc = make([]uint64, len(hwCounters))
	h.qdrop = make([]uint64, queues)
}

// gather reads (and so clears) every counter into the totals.
func (d *Device) gather() {
	h := &d.hw
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, c := range hwCounters {
		v := uint64(d.regs.Read32(c.lo))
		if c.hi != 0 {
			v |= uint64(d.regs.Read32(c.hi)) << 32
		}
		h.acc[i] += v
	}
	for i := range h.qdrop {
		h.qdrop[i] += uint64(d.regs.Read32(qreg(RQDPC, i)))
	}
}

// Stats implements nic.NIC: the driver's counters summed over the queues,
// how frames were built, program verdicts, per-queue counts, then the
// device's counters.
func (d *Device) Stats() []nic.Stat {
	var out []nic.Stat
	add := func(name string, v uint64) { out = append(out, nic.Stat{Name: name, Value: v}) }
	sum := map[string]uint64{}
	var order []string
	acc := func(name string, v uint64) {
		if _, ok := sum[name]; !ok {
			order = append(order, name)
		}
		sum[name] += v
	}
	for _, q := range d.queues {
		q.rx.Stats.Each(acc)
		q.rx.Pages.Each(acc)
		q.rx.Chunks.Each(acc)
		q.tx.Stats.Each(acc)
		acc("rx_build", q.built.Load())
		acc("rx_construct", q.constructed.Load())
		acc("rx_relayouts", q.relayouts.Load())
		for v := xsk.Pass; v <= xsk.Redirect; v++ {
			acc("xdp_"+v.String(), q.verdict[v].Load())
		}
	}
	for _, name := range order {
		add(name, sum[name])
	}
	for i, q := range d.queues {
		add(fmt.Sprintf("q%d_rx_frames", i), q.rx.Stats.Frames.Load())
		add(fmt.Sprintf("q%d_tx_packets", i), q.tx.Stats.Packets.Load())
	}
	add("link_changes", d.changes.Load())
	if !d.closed.Load() {
		d.gather()
	}
	d.hw.mu.Lock()
	for i, c := range hwCounters {
		add(c.name, d.hw.acc[i])
	}
	for i, v := range d.hw.qdrop {
		add(fmt.Sprintf("q%d_rx_drops", i), v)
	}
	d.hw.mu.Unlock()
	return out
}
