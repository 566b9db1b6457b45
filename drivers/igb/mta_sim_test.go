package igb_test

import (
	"net/netip"
	"testing"

	"github.com/ether9/ether9/drivers/internal/testhost"
	"github.com/ether9/ether9/kernel/sim/wire"
	"github.com/ether9/ether9/netstack"
)

// IPv6 between two machines with no static neighbours: neighbour
// discovery's solicitations go to solicited-node groups, which the
// model's MTA passes only when the driver programs it; a TCP transfer
// then moves every byte.
func TestSimIPv6NeighbourDiscovery(t *testing.T) {
	addrA, addrB := netip.MustParsePrefix("2001:db8::1/64"), netip.MustParsePrefix("2001:db8::2/64")
	w := testhost.Wire(t, wire.Options{})
	a := newDeferredHost(t, w.A(), 1, false)
	b := newDeferredHost(t, w.B(), 2, false)
	a.Up(t, addrA, netstack.Options{})
	b.Up(t, addrB, netstack.Options{})
	testhost.TCP(t, b.Stack, a.Stack, addrA.Addr(), 64<<10, nil)
	a.Close(t)
	b.Close(t)
	a.checkClosed(t)
	b.checkClosed(t)
}

// The filter's commands and interface, frame by frame on the model.
func TestSimMulticastFilter(t *testing.T) {
	w := testhost.Wire(t, wire.Options{})
	h := newHost(t, w.A(), 1, false)
	testhost.CheckMulticastFilter(t, h.NIC, w.B())
	if err := h.NIC.Close(); err != nil {
		t.Fatal(err)
	}
	h.checkClosed(t)
}
