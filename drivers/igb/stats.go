package igb

import (
	"github.com/ether9/ether9/drivers/adv"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/nicstat"
)

// hwStats accumulates the device counters and each queue's RQDPC.
type hwStats struct{ nicstat.Hardware }

func (h *hwStats) init(queues int) {
	qdrop := make([]uint32, queues)
	for i := range qdrop {
		qdrop[i] = adv.QueueReg(adv.RQDPC, i)
	}
	h.Init(nicstat.Table(), qdrop...)
}

// Stats implements nic.NIC: the driver's counters summed over the queues,
// program verdicts, per-queue frame counts, then the device's counters.
func (d *Device) Stats() []nic.Stat {
	var out []nic.Stat
	add := func(name string, v uint64) { out = append(out, nic.Stat{Name: name, Value: v}) }
	var sum nicstat.Sum
	for _, q := range d.queues {
		q.rx.Stats.Each(sum.Add)
		q.rx.Pages.Each(sum.Add)
		q.tx.Stats.Each(sum.Add)
		q.x.EachStat(sum.Add)
		if s := q.x.Socket(); s != nil {
			s.Stats.Each(sum.Add)
		}
	}
	sum.Each(add)
	for i, q := range d.queues {
		add(nicstat.QueueName(i, "rx_frames"), q.rx.Stats.Frames.Load())
		add(nicstat.QueueName(i, "tx_packets"), q.tx.Stats.Packets.Load())
	}
	d.line.EachStat(len(d.queues), add)
	add("link_changes", d.link.Changes())
	add("copybreak", uint64(d.queues[0].rx.Copybreak()))
	if !d.closed.Load() {
		d.hw.Gather(d.regs)
	}
	d.hw.Each(add)
	return out
}
