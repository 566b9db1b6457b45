package e1000e

import "github.com/ether9/ether9/drivers/nic"

// Stats implements nic.NIC: driver counters, then the device's.
func (d *Device) Stats() []nic.Stat {
	var out []nic.Stat
	add := func(name string, v uint64) { out = append(out, nic.Stat{Name: name, Value: v}) }
	d.rx.Stats.Each(add)
	d.tx.Stats.Each(add)
	add("link_changes", d.linkChanges.Load())
	add("copybreak", uint64(d.rx.Copybreak()))
	if !d.closed.Load() {
		d.hw.Gather(d.regs)
	}
	d.hw.Each(add)
	return out
}
