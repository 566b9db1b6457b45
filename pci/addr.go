package pci

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
)

// Compare orders addresses by segment, bus, device, function.
func (a Addr) Compare(b Addr) int {
	return cmp.Or(cmp.Compare(a.Seg, b.Seg), cmp.Compare(a.Bus, b.Bus), cmp.Compare(a.Dev, b.Dev), cmp.Compare(a.Fn, b.Fn))
}

// ParseAddr parses SSSS:BB:DD.F or BB:DD.F (segment 0).
func ParseAddr(s string) (Addr, error) {
	bad := func(why string) (Addr, error) {
		return Addr{}, fmt.Errorf("pci: address %q: %s", s, why)
	}
	parts := strings.Split(s, ":")
	var seg uint64
	switch len(parts) {
	case 2:
	case 3:
		var err error
		if seg, err = strconv.ParseUint(parts[0], 16, 16); err != nil || len(parts[0]) > 4 {
			return bad("bad segment")
		}
		parts = parts[1:]
	default:
		return bad("want [segment:]bus:device.function")
	}
	bus, err := strconv.ParseUint(parts[0], 16, 8)
	if err != nil || len(parts[0]) > 2 {
		return bad("bad bus")
	}
	devStr, fnStr, ok := strings.Cut(parts[1], ".")
	if !ok {
		return bad("no function number")
	}
	dev, err := strconv.ParseUint(devStr, 16, 8)
	if err != nil || dev > 31 || len(devStr) > 2 {
		return bad("bad device number")
	}
	fn, err := strconv.ParseUint(fnStr, 16, 8)
	if err != nil || fn > 7 || len(fnStr) != 1 {
		return bad("bad function number")
	}
	return Addr{Seg: uint16(seg), Bus: uint8(bus), Dev: uint8(dev), Fn: uint8(fn)}, nil
}
