package netstack

import (
	"net/netip"

	"github.com/ether9/ether9/drivers/nic"
)

// gVisor joins multicast groups inside the stack and never tells the link
// endpoint, so the endpoint derives the groups a receive filter must pass
// from the interface's addresses: with any IPv6 address, the all-nodes
// group and the solicited-node group of each address (neighbour discovery
// needs both). The stack calls SyncMulticast whenever it changes the
// addresses. Groups joined by sockets (IGMP, MLD) are not tracked: a
// driver filter that refuses a group falls back to all-multicast.

// allNodes is ff02::1 on Ethernet.
var allNodes = [6]byte{0x33, 0x33, 0, 0, 0, 1}

// ipv6GroupMAC is the Ethernet group of IPv6 multicast address a (RFC 2464:
// 33:33 and the low 32 bits).
func ipv6GroupMAC(a netip.Addr) [6]byte {
	b := a.As16()
	return [6]byte{0x33, 0x33, b[12], b[13], b[14], b[15]}
}

// solicitedNode is the Ethernet group of a's solicited-node address
// ff02::1:ffXX:XXXX.
func solicitedNode(a netip.Addr) [6]byte {
	b := a.As16()
	return [6]byte{0x33, 0x33, 0xff, b[13], b[14], b[15]}
}

// groupsFor is the set of Ethernet groups addrs need.
func groupsFor(addrs []netip.Addr) map[[6]byte]bool {
	g := make(map[[6]byte]bool)
	for _, a := range addrs {
		if !a.Is6() || a.Is4In6() {
			continue
		}
		g[allNodes] = true
		if a.IsMulticast() {
			g[ipv6GroupMAC(a)] = true
		} else {
			g[solicitedNode(a)] = true
		}
	}
	return g
}

// SyncMulticast makes the driver's receive filter pass the groups that
// addrs (the interface's addresses) need, joining new groups and leaving
// old ones. A driver without nic.MulticastFilter is left as it is; a group
// the driver refuses turns all-multicast on, which stays on. It returns
// the number of groups joined.
func (e *Endpoint) SyncMulticast(addrs []netip.Addr) int {
	f, ok := e.nic.(nic.MulticastFilter)
	if !ok {
		return 0
	}
	want := groupsFor(addrs)
	e.mcMu.Lock()
	defer e.mcMu.Unlock()
	if e.groups == nil {
		e.groups = make(map[[6]byte]bool)
	}
	for g := range e.groups {
		if want[g] {
			continue
		}
		if err := f.RemoveMulticast(g); err != nil {
			e.opt.Logf("%s: leave %x: %v", e.nic.Name(), g, err)
		}
		delete(e.groups, g)
	}
	for g := range want {
		if e.groups[g] {
			continue
		}
		if err := f.AddMulticast(g); err != nil {
			e.opt.Logf("%s: join %x: %v; passing all multicast", e.nic.Name(), g, err)
			if !e.allMulti {
				if err := f.SetAllMulticast(true); err != nil {
					e.opt.Logf("%s: all-multicast: %v", e.nic.Name(), err)
				} else {
					e.allMulti = true
				}
			}
			continue
		}
		e.groups[g] = true
	}
	return len(e.groups)
}
