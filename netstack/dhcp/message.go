// Package dhcp is a DHCPv4 client (RFC 2131, options from RFC 2132) that
// runs on a gVisor stack: DISCOVER, OFFER, REQUEST, ACK, and the lease's
// address, subnet mask, router and DNS servers.
package dhcp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"time"
)

// BOOTP/DHCP message layout (RFC 2131 section 2).
const (
	opRequest = 1
	opReply   = 2

	htypeEthernet = 1

	offOp     = 0
	offHtype  = 1
	offHlen   = 2
	offXid    = 4
	offFlags  = 10
	offCiaddr = 12
	offYiaddr = 16
	offSiaddr = 20
	offChaddr = 28
	offCookie = 236
	offOpts   = 240

	flagBroadcast = 0x8000

	// minMessage is the BOOTP minimum (RFC 1542): shorter requests are
	// padded, since some relays and servers drop them.
	minMessage = 300
)

var magicCookie = [4]byte{99, 130, 83, 99}

// Option codes (RFC 2132).
const (
	optPad          = 0
	optSubnetMask   = 1
	optRouter       = 3
	optDNS          = 6
	optHostname     = 12
	optRequestedIP  = 50
	optLeaseTime    = 51
	optOverload     = 52
	optMessageType  = 53
	optServerID     = 54
	optParamRequest = 55
	optMaxSize      = 57
	optRenewalTime  = 58
	optClientID     = 61
	optEnd          = 255
)

// msgType is the DHCP message type (option 53).
type msgType uint8

const (
	msgDiscover msgType = 1
	msgOffer    msgType = 2
	msgRequest  msgType = 3
	msgDecline  msgType = 4
	msgAck      msgType = 5
	msgNak      msgType = 6
	msgRelease  msgType = 7
)

func (t msgType) String() string {
	names := [...]string{"", "DISCOVER", "OFFER", "REQUEST", "DECLINE", "ACK", "NAK", "RELEASE", "INFORM"}
	if int(t) < len(names) && t != 0 {
		return names[t]
	}
	return fmt.Sprintf("type %d", uint8(t))
}

// message is a decoded DHCP message: the fixed fields this client uses and
// its options by code.
type message struct {
	op     uint8
	xid    uint32
	flags  uint16
	ciaddr netip.Addr
	yiaddr netip.Addr
	siaddr netip.Addr
	chaddr [6]byte
	opts   map[uint8][]byte
}

// errMalformed marks replies that cannot be decoded.
var errMalformed = errors.New("malformed DHCP message")

// marshal encodes m with its options in ascending code order.
func (m *message) marshal() []byte {
	b := make([]byte, offOpts, minMessage)
	b[offOp] = m.op
	b[offHtype] = htypeEthernet
	b[offHlen] = 6
	binary.BigEndian.PutUint32(b[offXid:], m.xid)
	binary.BigEndian.PutUint16(b[offFlags:], m.flags)
	put4(b[offCiaddr:], m.ciaddr)
	put4(b[offYiaddr:], m.yiaddr)
	put4(b[offSiaddr:], m.siaddr)
	copy(b[offChaddr:], m.chaddr[:])
	copy(b[offCookie:], magicCookie[:])
	// Message type first (RFC 2131 does not require it, but servers in
	// the wild look for it there), then the rest in code order.
	if t, ok := m.opts[optMessageType]; ok {
		b = append(b, optMessageType, byte(len(t)))
		b = append(b, t...)
	}
	for code := 1; code < optEnd; code++ {
		v, ok := m.opts[uint8(code)]
		if !ok || code == optMessageType {
			continue
		}
		b = append(b, uint8(code), byte(len(v)))
		b = append(b, v...)
	}
	b = append(b, optEnd)
	for len(b) < minMessage {
		b = append(b, optPad)
	}
	return b
}

func put4(b []byte, a netip.Addr) {
	if a.Is4() {
		v := a.As4()
		copy(b, v[:])
	}
}

// parse decodes a DHCP message. It checks the fixed header, the magic
// cookie and every option's length, and reports the first problem.
func parse(b []byte) (*message, error) {
	if len(b) < offOpts {
		return nil, fmt.Errorf("%w: %d bytes, header and cookie need %d", errMalformed, len(b), offOpts)
	}
	if b[offHtype] != htypeEthernet || b[offHlen] != 6 {
		return nil, fmt.Errorf("%w: hardware type %d length %d, want Ethernet", errMalformed, b[offHtype], b[offHlen])
	}
	if [4]byte(b[offCookie:offOpts]) != magicCookie {
		return nil, fmt.Errorf("%w: magic cookie % x", errMalformed, b[offCookie:offOpts])
	}
	m := &message{
		op:     b[offOp],
		xid:    binary.BigEndian.Uint32(b[offXid:]),
		flags:  binary.BigEndian.Uint16(b[offFlags:]),
		ciaddr: netip.AddrFrom4([4]byte(b[offCiaddr:])),
		yiaddr: netip.AddrFrom4([4]byte(b[offYiaddr:])),
		siaddr: netip.AddrFrom4([4]byte(b[offSiaddr:])),
		chaddr: [6]byte(b[offChaddr:]),
		opts:   make(map[uint8][]byte),
	}
	opts := b[offOpts:]
	for i := 0; i < len(opts); {
		code := opts[i]
		if code == optPad {
			i++
			continue
		}
		if code == optEnd {
			return m, m.checkOptions()
		}
		if i+1 >= len(opts) {
			return nil, fmt.Errorf("%w: option %d at offset %d has no length", errMalformed, code, offOpts+i)
		}
		n := int(opts[i+1])
		if i+2+n > len(opts) {
			return nil, fmt.Errorf("%w: option %d claims %d bytes, %d remain", errMalformed, code, n, len(opts)-i-2)
		}
		// RFC 3396: a repeated option continues the earlier one.
		m.opts[code] = append(m.opts[code], opts[i+2:i+2+n]...)
		i += 2 + n
	}
	return nil, fmt.Errorf("%w: options not terminated by END", errMalformed)
}

// fixedLen gives the exact or unit length of the options this client
// interprets: exact for scalars, a multiple for address lists.
var fixedLen = map[uint8]struct {
	n     int
	multi bool
}{
	optSubnetMask:  {4, false},
	optRouter:      {4, true},
	optDNS:         {4, true},
	optLeaseTime:   {4, false},
	optRenewalTime: {4, false},
	optMessageType: {1, false},
	optServerID:    {4, false},
	optOverload:    {1, false},
}

func (m *message) checkOptions() error {
	for code, v := range m.opts {
		f, ok := fixedLen[code]
		if !ok {
			continue
		}
		if f.multi && (len(v) == 0 || len(v)%f.n != 0) || !f.multi && len(v) != f.n {
			return fmt.Errorf("%w: option %d has length %d", errMalformed, code, len(v))
		}
	}
	if _, ok := m.opts[optOverload]; ok {
		// Options spilled into sname/file: not used by the servers this
		// client meets, and refused rather than half read.
		return fmt.Errorf("%w: option overload (52) not supported", errMalformed)
	}
	return nil
}

func (m *message) msgType() msgType {
	if v := m.opts[optMessageType]; len(v) == 1 {
		return msgType(v[0])
	}
	return 0
}

func (m *message) addr(code uint8) (netip.Addr, bool) {
	v := m.opts[code]
	if len(v) < 4 {
		return netip.Addr{}, false
	}
	return netip.AddrFrom4([4]byte(v[:4])), true
}

func (m *message) addrs(code uint8) []netip.Addr {
	v := m.opts[code]
	var out []netip.Addr
	for ; len(v) >= 4; v = v[4:] {
		out = append(out, netip.AddrFrom4([4]byte(v[:4])))
	}
	return out
}

func (m *message) seconds(code uint8) (time.Duration, bool) {
	v := m.opts[code]
	if len(v) != 4 {
		return 0, false
	}
	s := binary.BigEndian.Uint32(v)
	if s == 0xffffffff {
		return time.Duration(1<<63 - 1), true // infinite lease
	}
	return time.Duration(s) * time.Second, true
}
