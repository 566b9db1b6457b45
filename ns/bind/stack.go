package bind

import (
	"fmt"
	"net"
	"reflect"
	"strings"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/ether9/ether9/ns"
)

// Stack registers /net/ipifc/N/{addr,mask,gateway,mtu} for each NIC of
// the stack (N counts from 0 in NIC id order) and /net/tcp/stats,
// /net/udp/stats from gVisor's counters.
func Stack(n *ns.Namespace, s *stack.Stack) error {
	ids := make([]tcpip.NICID, 0)
	for id := range s.NICInfo() {
		ids = append(ids, id)
	}
	for i := range ids {
		for j := i + 1; j < len(ids); j++ {
			if ids[j] < ids[i] {
				ids[i], ids[j] = ids[j], ids[i]
			}
		}
	}
	for i, id := range ids {
		id := id
		dir := fmt.Sprintf("/net/ipifc/%d/", i)
		files := []struct {
			name string
			f    ns.File
		}{
			{"addr", ns.Text(func() string { return addrs(s, id, false) })},
			{"mask", ns.Text(func() string { return addrs(s, id, true) })},
			{"gateway", ns.Text(func() string { return gateway(s, id) })},
			{"mtu", ns.Text(func() string { return fmt.Sprintf("%d\n", s.NICInfo()[id].MTU) })},
		}
		for _, f := range files {
			if err := n.Add(dir+f.name, f.f); err != nil {
				return fmt.Errorf("bind stack: %w", err)
			}
		}
	}
	if err := n.Add("/net/tcp/stats", ns.Text(func() string { return counters(s.Stats().TCP) })); err != nil {
		return fmt.Errorf("bind stack: %w", err)
	}
	if err := n.Add("/net/udp/stats", ns.Text(func() string { return counters(s.Stats().UDP) })); err != nil {
		return fmt.Errorf("bind stack: %w", err)
	}
	return nil
}

func addrs(s *stack.Stack, id tcpip.NICID, mask bool) string {
	var b strings.Builder
	for _, pa := range s.NICInfo()[id].ProtocolAddresses {
		a := pa.AddressWithPrefix
		if mask {
			if pa.Protocol == header.IPv4ProtocolNumber {
				fmt.Fprintf(&b, "%s\n", net.IP(net.CIDRMask(a.PrefixLen, 32)))
			} else {
				fmt.Fprintf(&b, "/%d\n", a.PrefixLen)
			}
			continue
		}
		fmt.Fprintf(&b, "%s\n", a.Address)
	}
	return b.String()
}

func gateway(s *stack.Stack, id tcpip.NICID) string {
	var b strings.Builder
	for _, r := range s.GetRouteTable() {
		if r.NIC == id && r.Destination.Prefix() == 0 && r.Gateway.Len() > 0 {
			fmt.Fprintf(&b, "%s\n", r.Gateway)
		}
	}
	return b.String()
}

// counters renders every *tcpip.StatCounter in a gVisor stats struct as
// "Name: value", nested structs as "Outer.Inner: value".
func counters(v any) string {
	var b strings.Builder
	walk(&b, "", reflect.ValueOf(v))
	return b.String()
}

var counterType = reflect.TypeOf((*tcpip.StatCounter)(nil))

func walk(b *strings.Builder, prefix string, v reflect.Value) {
	if v.Kind() == reflect.Pointer && v.Type() != counterType {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return
	}
	t := v.Type()
	for i := 0; i < v.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		fv := v.Field(i)
		switch {
		case fv.Type() == counterType:
			if !fv.IsNil() {
				fmt.Fprintf(b, "%s%s: %d\n", prefix, f.Name, fv.Interface().(*tcpip.StatCounter).Value())
			}
		case fv.Kind() == reflect.Struct:
			walk(b, prefix+f.Name+".", fv)
		}
	}
}
