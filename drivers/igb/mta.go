package igb

import "github.com/ether9/ether9/drivers/nic"

var _ nic.MulticastFilter = (*Device)(nil)

// AddMulticast implements nic.MulticastFilter (adv.Multicast).
func (d *Device) AddMulticast(mac [6]byte) error { return d.mc.Add(d.regs, "igb "+d.name, mac) }

// RemoveMulticast implements nic.MulticastFilter.
func (d *Device) RemoveMulticast(mac [6]byte) error { return d.mc.Remove(d.regs, "igb "+d.name, mac) }

// SetAllMulticast implements nic.MulticastFilter.
func (d *Device) SetAllMulticast(on bool) error {
	d.mc.SetAll(d.regs, on)
	return nil
}
