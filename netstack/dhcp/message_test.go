package dhcp

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestMessageRoundTrip(t *testing.T) {
	m := &message{
		op:     opRequest,
		xid:    0xdeadbeef,
		flags:  flagBroadcast,
		yiaddr: netip.MustParseAddr("192.0.2.9"),
		chaddr: [6]byte{2, 0, 0, 0, 0, 1},
		opts: map[uint8][]byte{
			optMessageType: {byte(msgRequest)},
			optSubnetMask:  {255, 255, 0, 0},
			optDNS:         {192, 0, 2, 1, 192, 0, 2, 2},
		},
	}
	b := m.marshal()
	if len(b) < minMessage {
		t.Errorf("message of %d bytes, below the BOOTP minimum %d", len(b), minMessage)
	}
	if b[offOpts] != optMessageType {
		t.Errorf("first option %d, want the message type", b[offOpts])
	}
	got, err := parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.xid != m.xid || got.flags != m.flags || got.yiaddr != m.yiaddr || got.chaddr != m.chaddr || got.msgType() != msgRequest {
		t.Errorf("round trip: %+v", got)
	}
	if d := got.addrs(optDNS); len(d) != 2 || d[1] != netip.MustParseAddr("192.0.2.2") {
		t.Errorf("DNS %v", d)
	}
}

func TestParseMalformed(t *testing.T) {
	good := (&message{op: opReply, opts: map[uint8][]byte{optMessageType: {byte(msgAck)}}}).marshal()
	edit := func(f func(b []byte) []byte) []byte {
		return f(append([]byte(nil), good...))
	}
	for _, tc := range []struct {
		name string
		b    []byte
		want string
	}{
		{"short", good[:100], "header and cookie"},
		{"cookie", edit(func(b []byte) []byte { b[offCookie] = 0; return b }), "magic cookie"},
		{"hardware", edit(func(b []byte) []byte { b[offHtype] = 6; return b }), "hardware type"},
		{"overrun", append(good[:offOpts:offOpts], optLeaseTime, 4, 0, 0), "claims 4 bytes"},
		{"no length", append(good[:offOpts:offOpts], optRouter), "no length"},
		{"unterminated", append(good[:offOpts:offOpts], optMessageType, 1, 5), "not terminated"},
		{"mask length", append(good[:offOpts:offOpts], optSubnetMask, 3, 255, 255, 255, optEnd), "option 1 has length 3"},
		{"router length", append(good[:offOpts:offOpts], optRouter, 6, 1, 2, 3, 4, 5, 6, optEnd), "option 3 has length 6"},
		{"overload", append(good[:offOpts:offOpts], optOverload, 1, 3, optEnd), "overload"},
	} {
		_, err := parse(tc.b)
		if err == nil || !errors.Is(err, errMalformed) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one about %q", tc.name, err, tc.want)
		}
	}
}

func TestLeaseFromACK(t *testing.T) {
	srv := netip.MustParseAddr("192.0.2.1")
	ack := &message{yiaddr: netip.MustParseAddr("192.0.2.9"), opts: map[uint8][]byte{
		optSubnetMask: {255, 255, 255, 0}, optLeaseTime: {0, 0, 0x0e, 0x10}, optRenewalTime: {0, 0, 0, 60},
	}}
	l, err := leaseFrom(ack, srv)
	if err != nil {
		t.Fatal(err)
	}
	if l.Addr.String() != "192.0.2.9/24" || l.Duration.Seconds() != 3600 || l.Renew.Seconds() != 60 || l.Router.IsValid() {
		t.Errorf("lease %v renew %v", l, l.Renew)
	}
	for name, opts := range map[string]map[uint8][]byte{
		"no mask":       {optLeaseTime: {0, 0, 0, 1}},
		"holey mask":    {optSubnetMask: {255, 0, 255, 0}, optLeaseTime: {0, 0, 0, 1}},
		"no lease time": {optSubnetMask: {255, 255, 255, 0}},
	} {
		if _, err := leaseFrom(&message{yiaddr: ack.yiaddr, opts: opts}, srv); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
