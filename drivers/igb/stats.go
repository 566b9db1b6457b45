package igb

import "github.com/ether9/ether9/drivers/nic"

// Stats implements nic.NIC (adv.Port.Stats): with the half pages' reuse
// counters and the copybreak in force.
func (d *Device) Stats() []nic.Stat {
	return d.Port.Stats(func(i int, add func(string, uint64)) { d.queues[i].rx.Pages.Each(add) },
		func(add func(string, uint64)) { add("copybreak", uint64(d.queues[0].rx.Copybreak())) })
}
