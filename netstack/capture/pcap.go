package capture

import (
	"encoding/binary"
	"net/netip"
)

// The pcap file format (libpcap's, as tcpdump and tshark read it), with
// nanosecond timestamps.
const (
	magicNanos   = 0xa1b23c4d // little-endian file, nanosecond timestamps
	linkEthernet = 1          // LINKTYPE_ETHERNET
	fileHeaderSz = 24
	recordHeader = 16
	headers      = 14 + 60 + 4 // Ethernet, the longest IPv4 header, TCP ports (IPv6 needs less)
)

// fileHeader appends the pcap file header for frames cut at snaplen.
func fileHeader(b []byte, snaplen int) []byte {
	le := binary.LittleEndian
	b = le.AppendUint32(b, magicNanos)
	b = le.AppendUint16(b, 2) // version 2.4
	b = le.AppendUint16(b, 4)
	b = le.AppendUint32(b, 0) // thiszone: timestamps are UTC
	b = le.AppendUint32(b, 0) // sigfigs
	b = le.AppendUint32(b, uint32(snaplen))
	return le.AppendUint32(b, linkEthernet)
}

// record appends one frame's record: seconds, nanoseconds, bytes kept,
// bytes on the wire, then the bytes.
func record(b []byte, s *slot) []byte {
	le := binary.LittleEndian
	b = le.AppendUint32(b, uint32(s.when/1e9))
	b = le.AppendUint32(b, uint32(s.when%1e9))
	b = le.AppendUint32(b, uint32(len(s.data)))
	b = le.AppendUint32(b, s.orig)
	return append(b, s.data...)
}

// tcpConn reads the TCP endpoints of an Ethernet II frame carrying IPv4
// or IPv6 (no extension headers, no VLAN tag); ok is false for any other.
func tcpConn(f []byte) (src, dst netip.AddrPort, ok bool) {
	const eth = 14
	if len(f) < eth {
		return src, dst, false
	}
	be := binary.BigEndian
	var sa, da netip.Addr
	var l4 []byte
	switch be.Uint16(f[12:]) {
	case 0x0800:
		ip := f[eth:]
		if len(ip) < 20 || ip[0]>>4 != 4 || ip[9] != 6 {
			return src, dst, false
		}
		hl := int(ip[0]&0xf) * 4
		if hl < 20 || len(ip) < hl+4 || be.Uint16(ip[6:])&0x1fff != 0 {
			return src, dst, false // short, or a later fragment: no ports
		}
		sa, da = netip.AddrFrom4([4]byte(ip[12:16])), netip.AddrFrom4([4]byte(ip[16:20]))
		l4 = ip[hl:]
	case 0x86dd:
		ip := f[eth:]
		if len(ip) < 44 || ip[6] != 6 {
			return src, dst, false
		}
		sa, da = netip.AddrFrom16([16]byte(ip[8:24])), netip.AddrFrom16([16]byte(ip[24:40]))
		l4 = ip[40:]
	default:
		return src, dst, false
	}
	return netip.AddrPortFrom(sa, be.Uint16(l4)), netip.AddrPortFrom(da, be.Uint16(l4[2:])), true
}
