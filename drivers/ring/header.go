package ring

import (
	"encoding/binary"

	"gvisor.dev/gvisor/pkg/buffer"
)

// HeaderCopy is the most a constructed packet's head holds, Linux igb's
// and igc's IGB_RX_HDR_LEN: 256 bytes, room for Ethernet with two VLAN
// tags, an IPv6 header and a TCP header with every option.
const HeaderCopy = 256

// EtherTypes and lengths HeaderLen looks through.
const (
	etherTypeIPv4 = 0x0800
	etherTypeIPv6 = 0x86dd
	etherTypeVLAN = 0x8100
	etherTypeQinQ = 0x88a8
	ethHdrLen     = 14
	vlanTagLen    = 4
)

// HeaderLen is how many bytes of frame b a constructed packet copies into
// its head: a frame of up to HeaderCopy bytes whole, else its Ethernet, IP
// and TCP or UDP headers as far as they parse, never more than
// HeaderCopy. What it cannot parse stays in the rest, where the stack
// still finds it, only copied on demand.
func HeaderLen(b []byte) int {
	if len(b) <= HeaderCopy {
		return len(b)
	}
	n, et := ethHdrLen, binary.BigEndian.Uint16(b[12:])
	for (et == etherTypeVLAN || et == etherTypeQinQ) && n+vlanTagLen <= len(b) {
		et = binary.BigEndian.Uint16(b[n+2:])
		n += vlanTagLen
	}
	var proto byte
	switch et {
	case etherTypeIPv4:
		if n+20 > len(b) {
			return n
		}
		ihl := int(b[n]&0xf) * 4
		if ihl < 20 {
			return n
		}
		proto = b[n+9]
		if binary.BigEndian.Uint16(b[n+6:])&0x3fff != 0 { // a fragment: no L4 header to follow
			return min(n+ihl, HeaderCopy)
		}
		n += ihl
	case etherTypeIPv6:
		if n+40 > len(b) {
			return n
		}
		proto = b[n+6]
		n += 40
	default:
		return n
	}
	switch proto {
	case 6: // TCP
		if n+20 <= len(b) {
			n += int(b[n+12]>>4) * 4
		}
	case 17: // UDP
		n += 8
	}
	return min(n, HeaderCopy, len(b))
}

// Construct makes a packet of the frame at [off, off+len(frame)) of page
// the way Linux's igb_construct_skb does: its headers (HeaderLen) copied
// into a head of its own, and the rest attached as a view sharing page,
// not copied. It reports whether the rest went up with the page; if not,
// the frame fitted the head and page is untouched.
//
// The head must be the packet's own: gVisor's views are copy-on-write,
// and the stack's first header pull-up from a view over a shared page
// clones the whole 4 KiB page. With the headers in the head, no pull-up
// reaches the page; the payload is copied once, into the reader's buffer.
func Construct(page *buffer.View, off int, frame []byte) (buffer.Buffer, bool) {
	hl := HeaderLen(frame)
	buf := buffer.MakeWithView(buffer.NewViewWithData(frame[:hl]))
	if hl == len(frame) {
		return buf, false
	}
	rest := page.Clone()
	rest.TrimFront(off + hl)
	rest.CapLength(len(frame) - hl)
	buf.Append(rest)
	return buf, true
}
