package pci

import (
	"fmt"
	"strings"
)

// String is the function's one-line summary: "pci 00:02.0 8086:10d3 e1000e".
func (f *Function) String() string {
	s := fmt.Sprintf("pci %v %04x:%04x", f.Addr, f.Vendor, f.Device)
	if f.Driver != "" {
		s += " " + f.Driver
	}
	return s
}

// Describe is the summary followed by indented lines for the class,
// bridge bus numbers, each present BAR and the capabilities:
//
//	pci 00:02.0 8086:10d3 e1000e
//		class 020000 network/ethernet rev 00 subsystem 8086:0000
//		bar0 mem32 0xfebc0000 size 0x20000
//		bar2 io 0xc000 size 0x20
//		caps pm@c8 msi@d0 pcie@e0 msix@a0 aer@100
func (f *Function) Describe() string {
	var b strings.Builder
	b.WriteString(f.String())
	fmt.Fprintf(&b, "\n\tclass %06x %s rev %02x", f.Class, ClassName(f.Class), f.Revision)
	if f.Header == HeaderNormal {
		fmt.Fprintf(&b, " subsystem %04x:%04x", f.SubVendor, f.SubDevice)
	}
	if f.IsBridge() {
		fmt.Fprintf(&b, "\n\tbus primary %02x secondary %02x subordinate %02x", f.Primary, f.Secondary, f.Subordinate)
	}
	for _, bar := range f.BARs {
		if bar.Kind == BARNone {
			continue
		}
		fmt.Fprintf(&b, "\n\t%v", bar)
	}
	if len(f.Caps) > 0 {
		b.WriteString("\n\tcaps")
		for _, c := range f.Caps {
			b.WriteString(" " + c.String())
		}
	}
	return b.String()
}

// String is "bar0 mem64 pref 0xfe000000 size 0x20000"; an unsized BAR
// shows no size.
func (b BAR) String() string {
	s := fmt.Sprintf("bar%d %v", b.Index, b.Kind)
	if b.Prefetchable {
		s += " pref"
	}
	s += fmt.Sprintf(" %#x", b.Addr)
	if b.Size != 0 {
		s += fmt.Sprintf(" size %#x", b.Size)
	}
	if b.Assigned {
		s += " assigned"
	}
	return s
}
