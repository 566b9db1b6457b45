package e1000e

import "github.com/ether9/ether9/drivers/nic"

// Stats implements nic.NIC: driver counters (including those of rings a
// resize replaced), then the device's.
func (d *Device) Stats() []nic.Stat {
	var out []nic.Stat
	add := func(name string, v uint64) { out = append(out, nic.Stat{Name: name, Value: v}) }
	q := &d.q
	q.rxMu.Lock()
	q.rx.Stats.Each(func(name string, v uint64) { add(name, v+q.rxRetired[name]) })
	copybreak := q.rx.Copybreak()
	q.rxMu.Unlock()
	q.txMu.Lock()
	q.tx.Stats.Each(func(name string, v uint64) { add(name, v+q.txRetired[name]) })
	q.txMu.Unlock()
	add("tx_dma_faults", q.txInj.faulted.Load())
	add("tx_dma_resent", q.txInj.resent.Load())
	add("rx_drop_reconfig", q.rxReconfigDrops.Load())
	add("link_changes", d.linkChanges.Load())
	add("irq_wakes", q.irqStats.Wakes.Load())
	add("irq_timeouts", q.irqStats.Timeouts.Load())
	add("copybreak", uint64(copybreak))
	d.copybreakStats(add)
	d.deviceStats(add)
	return out
}

// DeviceStats implements nic.DeviceStater: the device's statistics
// registers alone, accumulated across reads (they clear when read) and
// resets.
func (d *Device) DeviceStats() []nic.Stat {
	var out []nic.Stat
	d.deviceStats(func(name string, v uint64) { out = append(out, nic.Stat{Name: name, Value: v}) })
	return out
}

// deviceStats gathers the registers under the queue's rxMu, so never
// while Reset has the device in CTRL.RST.
func (d *Device) deviceStats(add func(string, uint64)) {
	d.q.rxMu.Lock()
	if !d.closed.Load() {
		d.hw.Gather(d.regs)
	}
	d.q.rxMu.Unlock()
	d.hw.Each(add)
}

var _ nic.DeviceStater = (*Device)(nil)
