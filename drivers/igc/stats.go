package igc

import (
	"github.com/ether9/ether9/drivers/adv"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/nicstat"
)

// absentCounters are the statistics registers the I225 does not have.
var absentCounters = []uint32{nicstat.SYMERRS, nicstat.SEC, nicstat.TSCTFC}

// initStats sets the device counters to gather, with each queue's RQDPC.
func (d *Device) initStats() {
	qdrop := make([]uint32, len(d.queues))
	for i := range qdrop {
		qdrop[i] = adv.QueueReg(adv.RQDPC, i)
	}
	d.hw.Init(nicstat.Table(absentCounters...), qdrop...)
}

// Stats implements nic.NIC: the driver's counters summed over the queues,
// how frames were built, program verdicts, per-queue counts, then the
// device's counters.
func (d *Device) Stats() []nic.Stat {
	var out []nic.Stat
	add := func(name string, v uint64) { out = append(out, nic.Stat{Name: name, Value: v}) }
	var sum nicstat.Sum
	for _, q := range d.queues {
		q.rx.Stats.Each(sum.Add)
		q.rx.Pages.Each(sum.Add)
		q.rx.Chunks.Each(sum.Add)
		q.tx.Stats.Each(sum.Add)
		sum.Add("rx_build", q.built.Load())
		sum.Add("rx_construct", q.constructed.Load())
		sum.Add("rx_relayouts", q.relayouts.Load())
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
	if !d.closed.Load() {
		d.hw.Gather(d.regs)
	}
	d.hw.Each(add)
	return out
}
