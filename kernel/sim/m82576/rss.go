package m82576

import (
	"encoding/binary"

	"github.com/ether9/ether9/kernel/sim/nicmodel"
)

// rssHash is the receive-side scaling hash (datasheet 7.1.2.8): the
// Toeplitz hash of the source and destination addresses, and the source
// and destination ports when the packet type's field is enabled in MRQC.
// An IPv6 packet with extension headers is hashed on its own addresses
// under the "Ex" types. It returns the RSS type and the hash.
func rssHash(t *nicmodel.ToeplitzTable, mrqc uint32, p *nicmodel.Packet) (typ, hash uint32) {
	if !p.IPv4 && !p.IPv6 || p.Src == nil {
		return RSSNone, 0
	}
	tcp, udp := p.TCP(), p.UDP()
	on := func(bit uint32) bool { return mrqc&bit != 0 }
	ports := false
	switch {
	case p.IPv4 && tcp && on(nicmodel.MrqcTCPIPv4):
		typ, ports = RSSTCPIPv4, true
	case p.IPv4 && udp && on(nicmodel.MrqcUDPIPv4):
		typ, ports = RSSUDPIPv4, true
	case p.IPv4 && on(nicmodel.MrqcIPv4):
		typ = RSSIPv4
	case p.IPv6 && tcp && p.IPOpts && on(nicmodel.MrqcTCPIPv6Ex):
		typ, ports = RSSTCPIPv6Ex, true
	case p.IPv6 && tcp && on(nicmodel.MrqcTCPIPv6):
		typ, ports = RSSTCPIPv6, true
	case p.IPv6 && udp && p.IPOpts && on(MrqcUDPIPv6Ex):
		typ, ports = RSSUDPIPv6Ex, true
	case p.IPv6 && udp && on(nicmodel.MrqcUDPIPv6):
		typ, ports = RSSUDPIPv6, true
	case p.IPv6 && p.IPOpts && on(nicmodel.MrqcIPv6Ex):
		typ = RSSIPv6Ex
	case p.IPv6 && on(nicmodel.MrqcIPv6):
		typ = RSSIPv6
	case p.IPv6 && on(nicmodel.MrqcIPv6Ex):
		typ = RSSIPv6Ex
	default:
		return RSSNone, 0
	}
	var in [36]byte
	k := copy(in[:], p.Src)
	k += copy(in[k:], p.Dst)
	if ports {
		k += copy(in[k:], p.L4[:4])
	}
	return typ, t.Hash(in[:k])
}

// rssTableLocked returns the hash table for the key in RSSRK (byte 0 of
// the key is the low byte of RSSRK0), built again after the key changed.
func (n *NIC) rssTableLocked() *nicmodel.ToeplitzTable {
	if n.rssTable == nil {
		var key [40]byte
		for i := range uint32(10) {
			binary.LittleEndian.PutUint32(key[4*i:], n.regs[nicmodel.RSSRK/4+i])
		}
		n.rssTable = nicmodel.NewToeplitzTable(&key)
	}
	return n.rssTable
}

// retaLocked returns the queue the redirection table gives a hash: entry
// hash[6:0], one byte each, four to a register, low byte first.
func (n *NIC) retaLocked(hash uint32) uint32 {
	i := hash & (retaSize - 1)
	return n.regs[nicmodel.RETA/4+i/4] >> (8 * (i % 4)) & (numQueues - 1)
}
