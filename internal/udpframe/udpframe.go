// Package udpframe builds the Ethernet/IPv4/UDP frames that the
// benchmarks, the zero-copy queue samples and the guest's XDP run send:
// one flow's addresses and ports, a valid IPv4 header checksum, and a
// UDP checksum only when asked for, since a generator that rewrites its
// payload per frame cannot afford one.
package udpframe

import (
	"encoding/binary"

	"gvisor.dev/gvisor/pkg/tcpip/checksum"
)

// HeaderLen is the Ethernet, IPv4 (no options) and UDP headers' length;
// the payload starts there.
const HeaderLen = 14 + 20 + 8

// Flow is one UDP/IPv4 flow from Src to Dst.
type Flow struct {
	SrcMAC, DstMAC   [6]byte
	Src, Dst         [4]byte
	SrcPort, DstPort uint16
}

// Put writes an n-byte frame of the flow (n counts no FCS) into b and
// returns b[:n]: headers filled, payload zero, UDP checksum 0 (none).
// n must be at least HeaderLen and at most len(b).
func (f Flow) Put(b []byte, n int) []byte {
	fr := b[:n]
	clear(fr)
	copy(fr, f.DstMAC[:])
	copy(fr[6:], f.SrcMAC[:])
	binary.BigEndian.PutUint16(fr[12:], 0x0800) // EtherType IPv4
	ip := fr[14:34]
	ip[0] = 0x45 // version 4, 5 words of header
	binary.BigEndian.PutUint16(ip[2:], uint16(n-14))
	ip[8], ip[9] = 64, 17 // TTL, protocol UDP
	copy(ip[12:], f.Src[:])
	copy(ip[16:], f.Dst[:])
	binary.BigEndian.PutUint16(ip[10:], ^checksum.Checksum(ip, 0))
	udp := fr[34:]
	binary.BigEndian.PutUint16(udp[0:], f.SrcPort)
	binary.BigEndian.PutUint16(udp[2:], f.DstPort)
	binary.BigEndian.PutUint16(udp[4:], uint16(n-34))
	return fr
}

// SetChecksum computes the UDP checksum of a frame Put wrote, over its
// payload as it is now (RFC 768: a sum of 0 is sent as 0xffff).
func SetChecksum(fr []byte) {
	ip, udp := fr[14:34], fr[34:]
	binary.BigEndian.PutUint16(udp[6:], 0)
	var pseudo [12]byte
	copy(pseudo[:], ip[12:20])
	pseudo[9] = 17
	binary.BigEndian.PutUint16(pseudo[10:], uint16(len(udp)))
	sum := ^checksum.Checksum(udp, checksum.Checksum(pseudo[:], 0))
	if sum == 0 {
		sum = 0xffff
	}
	binary.BigEndian.PutUint16(udp[6:], sum)
}
