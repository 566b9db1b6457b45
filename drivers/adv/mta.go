package adv

import (
	"fmt"
	"net"
	"sync"

	"github.com/ether9/ether9/kernel"
)

// The multicast filter of the 82576 (datasheet 8.10.15, 7.1.1.1) and the
// I225 (8.11.x, 7.1.2.1) is the same: a frame to a group address passes
// when RCTL.MPE is set, or when the bit its 12-bit hash selects in the
// 4096-bit Multicast Table Array is set. With RCTL.MO = 00, which
// EnableRxTx leaves, the hash is destination address bits [47:36] and
// MTA[hash>>5] holds bit hash&31. Groups may share a bit, so the table
// is rebuilt from the set of groups on every change.

// MTAHash is the MTA bit of group address mac under RCTL.MO = 00.
func MTAHash(mac [6]byte) uint32 {
	return (uint32(mac[4])>>4 | uint32(mac[5])<<4) & 0xfff
}

// Multicast is a driver's multicast filter: the groups it passes and
// all-multicast. The zero value passes no group.
type Multicast struct {
	mu     sync.Mutex
	groups map[[6]byte]int // group address -> adds outstanding
	all    bool
}

// Add passes frames to group mac (adds are counted) and programs the
// table through r.
func (m *Multicast) Add(r kernel.Regs, name string, mac [6]byte) error {
	if mac[0]&1 == 0 {
		return fmt.Errorf("%s: add multicast %v: not a group address", name, net.HardwareAddr(mac[:]))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.groups == nil {
		m.groups = make(map[[6]byte]int)
	}
	m.groups[mac]++
	m.writeMTALocked(r)
	return nil
}

// Remove undoes one Add of mac.
func (m *Multicast) Remove(r kernel.Regs, name string, mac [6]byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.groups[mac]
	if !ok {
		return fmt.Errorf("%s: remove multicast %v: not a member", name, net.HardwareAddr(mac[:]))
	}
	if n > 1 {
		m.groups[mac] = n - 1
		return nil
	}
	delete(m.groups, mac)
	m.writeMTALocked(r)
	return nil
}

// SetAll turns all-multicast (RCTL.MPE) on or off.
func (m *Multicast) SetAll(r kernel.Regs, on bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.all = on
	m.writeRCTLLocked(r)
}

// Program writes the whole filter again: after a reset, which clears
// the table, and after EnableRxTx, which writes RCTL whole.
func (m *Multicast) Program(r kernel.Regs) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.writeMTALocked(r)
	m.writeRCTLLocked(r)
}

func (m *Multicast) writeMTALocked(r kernel.Regs) {
	var mta [NumMTA]uint32
	for g := range m.groups {
		h := MTAHash(g)
		mta[h>>5] |= 1 << (h & 31)
	}
	for i, v := range mta {
		r.Write32(MTA+uint32(4*i), v)
	}
}

func (m *Multicast) writeRCTLLocked(r kernel.Regs) {
	rctl := r.Read32(RCTL)
	if m.all {
		rctl |= RCTL_MPE
	} else {
		rctl &^= RCTL_MPE
	}
	r.Write32(RCTL, rctl)
}

// Ctl runs the filter's control commands: addmulti MAC, remmulti MAC,
// allmulti on|off. A bad one changes nothing.
func (m *Multicast) Ctl(r kernel.Regs, name, verb, arg string) error {
	switch verb {
	case "addmulti", "remmulti":
		hw, err := net.ParseMAC(arg)
		if err != nil || len(hw) != 6 {
			return fmt.Errorf("%s: %s %q: want a 48-bit MAC address", name, verb, arg)
		}
		if verb == "addmulti" {
			return m.Add(r, name, [6]byte(hw))
		}
		return m.Remove(r, name, [6]byte(hw))
	case "allmulti":
		switch arg {
		case "on", "off":
			m.SetAll(r, arg == "on")
			return nil
		}
		return fmt.Errorf("%s: allmulti %q: want on or off", name, arg)
	}
	return fmt.Errorf("%s: %q is not a multicast command", name, verb)
}
