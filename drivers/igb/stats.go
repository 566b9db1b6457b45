package igb

import "github.com/ether9/ether9/drivers/nic"

// Stats implements nic.NIC (adv.Port.Stats): with the half pages' reuse
// counters, the copybreak in force and whether frames go up built (1) or
// constructed (0).
func (d *Device) Stats() []nic.Stat {
	return d.Port.Stats(func(i int, add func(string, uint64)) { d.queues[i].rx.Pages.Each(add) },
		func(add func(string, uint64)) {
			rx := d.queues[0].rx
			add("copybreak", uint64(rx.Copybreak()))
			build := uint64(0)
			if rx.Build() {
				build = 1
			}
			add("build", build)
		})
}
