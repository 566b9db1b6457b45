package igb

import "github.com/ether9/ether9/drivers/advregs"

// rssKey is the hash key: the well-known default from Microsoft's RSS
// specification, so a flow's queue can be checked with any Toeplitz
// implementation.
var rssKey = [40]byte{
	0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2,
	0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0,
	0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4,
	0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c,
	0x6a, 0x42, 0xb3, 0x8f, 0xb0, 0x2b, 0xa2, 0x5c,
}

// retaEntry is the value of redirection table entry i for n queues.
func (d *Device) retaEntry(i, n int) uint32 {
	q := uint32(i % n)
	if d.info.Flags&FlagRETAShift6 != 0 {
		return q << 6
	}
	return q
}

// setupRSS writes the key, spreads the redirection table over the queues
// and turns on hashing of IPv4/IPv6 with TCP and UDP ports. One queue
// means no RSS: MRQC stays 0.
func (d *Device) setupRSS() {
	r := d.regs
	n := len(d.queues)
	for i := 0; i < len(rssKey)/4; i++ {
		k := rssKey[4*i:]
		r.Write32(advregs.RSSRK+uint32(4*i), uint32(k[0])|uint32(k[1])<<8|uint32(k[2])<<16|uint32(k[3])<<24)
	}
	for i := 0; i < advregs.RETAEntries/4; i++ {
		var v uint32
		for j := 0; j < 4; j++ {
			v |= d.retaEntry(4*i+j, n) << (8 * j)
		}
		r.Write32(advregs.RETA+uint32(4*i), v)
	}
	if n <= 1 {
		r.Write32(advregs.MRQC, 0)
		return
	}
	r.Write32(advregs.MRQC, advregs.MRQC_ENABLE_RSS|advregs.MRQC_RSS_FIELD_IPV4|advregs.MRQC_RSS_FIELD_IPV4_TCP|
		advregs.MRQC_RSS_FIELD_IPV6|advregs.MRQC_RSS_FIELD_IPV6_TCP|advregs.MRQC_RSS_FIELD_IPV4_UDP|advregs.MRQC_RSS_FIELD_IPV6_UDP)
}

// Toeplitz computes the RSS hash of input with the driver's key, as the
// device does: for tests and for tools that pick a flow for a queue.
func Toeplitz(input []byte) uint32 {
	var h uint32
	key := uint64(rssKey[0])<<56 | uint64(rssKey[1])<<48 | uint64(rssKey[2])<<40 | uint64(rssKey[3])<<32 |
		uint64(rssKey[4])<<24 | uint64(rssKey[5])<<16 | uint64(rssKey[6])<<8 | uint64(rssKey[7])
	next := 8
	for _, b := range input {
		for bit := 7; bit >= 0; bit-- {
			if b>>uint(bit)&1 != 0 {
				h ^= uint32(key >> 32)
			}
			key <<= 1
		}
		if next < len(rssKey) {
			key |= uint64(rssKey[next])
		}
		next++
	}
	return h
}

// QueueOfHash is the queue the redirection table sends hash h to.
func (d *Device) QueueOfHash(h uint32) int {
	return int(d.retaEntry(int(h&(advregs.RETAEntries-1)), len(d.queues)) >> d.retaShift())
}

func (d *Device) retaShift() uint {
	if d.info.Flags&FlagRETAShift6 != 0 {
		return 6
	}
	return 0
}
