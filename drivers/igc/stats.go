package igc

import "github.com/ether9/ether9/drivers/nic"

// Stats implements nic.NIC (adv.Port.Stats): with how frames were built
// and the half pages' and chunks' reuse counters.
func (d *Device) Stats() []nic.Stat {
	return d.Port.Stats(func(i int, add func(string, uint64)) {
		q := d.queues[i]
		q.rx.Pages.Each(add)
		q.rx.Chunks.Each(add)
		add("rx_build", q.built.Load())
		add("rx_construct", q.constructed.Load())
		add("rx_relayouts", q.relayouts.Load())
	}, func(func(string, uint64)) {})
}
