// Command router routes IPv4 and IPv6 between the machine's NICs with
// gVisor's forwarding: give each NIC its subnet on the kernel command
// line (ether9.ip=192.168.1.1/24 ether9.ether1.ip=192.168.2.1/24, or
// DHCP on the first) and the hosts on each side use the machine as their
// router. /router/stats has the stack's IP and forwarding counters.
//
//	go run ./boot -app ./examples/router -machine sim -nic e1000e,igc
package main

import (
	"context"
	"fmt"
	"strings"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv6"

	"github.com/ether9/ether9"
	"github.com/ether9/ether9/ns"
)

func main() { config.Main(route) }

// config keeps DHCP off the second NIC: it is the side this machine
// routes for.
var config = ether9.Config{Name: "router", Cmdline: "ether9.ether1.dhcp=off"}

func route(ctx context.Context, m *ether9.Machine) error {
	st := m.Stack()
	// Coalesced segments are for the machine's own sockets: a forwarded
	// one would leave bigger than the far side's MTU, and be dropped.
	for _, ep := range st.Endpoints {
		ep.SetGRO(false)
	}
	for _, p := range []tcpip.NetworkProtocolNumber{ipv4.ProtocolNumber, ipv6.ProtocolNumber} {
		if err := st.SetForwardingDefaultAndAllNICs(p, true); err != nil {
			return fmt.Errorf("forwarding on: %s", err)
		}
	}
	defer func() {
		// Off again, so a restart finds the stack as it began.
		for _, p := range []tcpip.NetworkProtocolNumber{ipv4.ProtocolNumber, ipv6.ProtocolNumber} {
			st.SetForwardingDefaultAndAllNICs(p, false)
		}
		for _, ep := range st.Endpoints {
			ep.SetGRO(true)
		}
	}()
	if err := m.Bind("/router/stats", ns.Text(func() string { return stats(m) })); err != nil {
		return err
	}
	for _, r := range st.GetRouteTable() {
		m.Log().Info("route", "to", r.Destination.String(), "via", r.Gateway.String(), "nic", r.NIC)
	}
	m.Log().Info("forwarding", "nics", len(m.System().Ports()))
	<-ctx.Done()
	return nil
}

// stats are the stack's IP and forwarding counters.
func stats(m *ether9.Machine) string {
	s := m.Stack().Stats()
	var b strings.Builder
	for _, c := range []struct {
		name string
		v    *tcpip.StatCounter
	}{
		{"ip_packets_received", s.IP.PacketsReceived},
		{"ip_packets_sent", s.IP.PacketsSent},
		{"forward_errors", s.IP.Forwarding.Errors},
		{"forward_unrouteable", s.IP.Forwarding.Unrouteable},
		{"forward_ttl_exceeded", s.IP.Forwarding.ExhaustedTTL},
		{"forward_packet_too_big", s.IP.Forwarding.PacketTooBig},
	} {
		fmt.Fprintf(&b, "%s: %d\n", c.name, c.v.Value())
	}
	return b.String()
}
