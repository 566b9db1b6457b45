package e1000e

import (
	"fmt"
	"net"
)

// The multicast filter is the 4096-bit Multicast Table Array: a group's
// frames pass when the bit its 12-bit hash selects is set. With RCTL.MO =
// 00 the hash is destination address bits [47:36]; MTA[hash>>5] holds bit
// hash&31. Different groups may share a bit, so the table is rebuilt from
// the set of groups on every change, and RCTL.MPE passes all multicast.

// mtaHash is the MTA bit of group address mac under RCTL.MO = 00.
func mtaHash(mac [6]byte) uint32 {
	return (uint32(mac[4])>>4 | uint32(mac[5])<<4) & 0xfff
}

// multicast is the driver's copy of the filter, guarded by Device.filterMu.
type multicast struct {
	groups  map[[6]byte]int // group address -> adds outstanding
	all     bool            // allmulti: RCTL.MPE
	promisc bool            // promiscuous: RCTL.UPE and MPE
}

// AddMulticast implements nic.MulticastFilter.
func (d *Device) AddMulticast(mac [6]byte) error {
	if mac[0]&1 == 0 {
		return fmt.Errorf("e1000e %s: add multicast %v: not a group address", d.name, net.HardwareAddr(mac[:]))
	}
	d.filterMu.Lock()
	defer d.filterMu.Unlock()
	if d.mc.groups == nil {
		d.mc.groups = make(map[[6]byte]int)
	}
	d.mc.groups[mac]++
	d.writeMTALocked()
	return nil
}

// RemoveMulticast implements nic.MulticastFilter.
func (d *Device) RemoveMulticast(mac [6]byte) error {
	d.filterMu.Lock()
	defer d.filterMu.Unlock()
	n, ok := d.mc.groups[mac]
	if !ok {
		return fmt.Errorf("e1000e %s: remove multicast %v: not a member", d.name, net.HardwareAddr(mac[:]))
	}
	if n > 1 {
		d.mc.groups[mac] = n - 1
		return nil
	}
	delete(d.mc.groups, mac)
	d.writeMTALocked()
	return nil
}

// SetAllMulticast implements nic.MulticastFilter.
func (d *Device) SetAllMulticast(on bool) error {
	d.filterMu.Lock()
	defer d.filterMu.Unlock()
	d.mc.all = on
	d.regs.Write32(RCTL, d.rctlFor(int(d.mtu.Load())))
	return nil
}

// SetPromiscuous passes every frame whatever its destination (RCTL.UPE
// and MPE) or returns to the address, broadcast and multicast filters.
// The allmulti setting is kept apart: promiscuous off restores it.
func (d *Device) SetPromiscuous(on bool) error {
	d.filterMu.Lock()
	defer d.filterMu.Unlock()
	d.mc.promisc = on
	d.regs.Write32(RCTL, d.rctlFor(int(d.mtu.Load())))
	return nil
}

// writeMTALocked programs the whole table from the groups. filterMu is
// held.
func (d *Device) writeMTALocked() {
	var mta [mtaRegs]uint32
	for g := range d.mc.groups {
		h := mtaHash(g)
		mta[h>>5] |= 1 << (h & 31)
	}
	for i, v := range mta {
		d.regs.Write32(MTA+uint32(4*i), v)
	}
}
