package acpi

import (
	"encoding/binary"
	"fmt"
)

// MCFG layout (PCI Firmware Specification 3.x, "MCFG Table Description"):
// the standard header, 8 reserved bytes, then one 16-byte configuration
// space base address allocation per ECAM window.
const (
	mcfgReservedLen = 8
	mcfgAllocLen    = 16
)

// ECAMBusSize is the configuration space one bus occupies in an ECAM window:
// 32 devices x 8 functions x 4 KiB.
const ECAMBusSize = 1 << 20

// MCFG is a parsed PCI Express memory-mapped configuration table.
type MCFG struct {
	Header      Header
	Allocations []MCFGAllocation
}

// MCFGAllocation is one ECAM window. Base is the address of bus 0 of the
// segment, even when StartBus is not 0, so the configuration space of bus b
// starts at Base + b<<20.
type MCFGAllocation struct {
	Base     uint64
	Segment  uint16
	StartBus uint8
	EndBus   uint8
}

// Size is the length of the window in bytes, from StartBus to EndBus.
func (a MCFGAllocation) Size() uint64 {
	return uint64(int(a.EndBus)-int(a.StartBus)+1) * ECAMBusSize
}

// Start is the physical address of StartBus's configuration space.
func (a MCFGAllocation) Start() uint64 {
	return a.Base + uint64(a.StartBus)*ECAMBusSize
}

// Covers reports whether the window decodes segment seg, bus bus.
func (a MCFGAllocation) Covers(seg uint16, bus uint8) bool {
	return a.Segment == seg && bus >= a.StartBus && bus <= a.EndBus
}

func (a MCFGAllocation) String() string {
	return fmt.Sprintf("ecam %#x segment %04x bus %02x-%02x", a.Base, a.Segment, a.StartBus, a.EndBus)
}

// ParseMCFG parses and validates an MCFG table. A table whose allocations
// do not fill its body exactly, a window with its buses reversed, a base
// that is not 1 MiB aligned or a window that wraps the address space, and
// two windows decoding the same bus are all errors.
func ParseMCFG(b []byte) (*MCFG, error) {
	h, body, err := ParseHeader(b, "MCFG")
	if err != nil {
		return nil, err
	}
	if len(body) < mcfgReservedLen {
		return nil, fmt.Errorf("acpi MCFG: body of %d bytes is shorter than its %d reserved bytes", len(body), mcfgReservedLen)
	}
	entries := body[mcfgReservedLen:]
	if len(entries)%mcfgAllocLen != 0 {
		return nil, fmt.Errorf("acpi MCFG: %d bytes of allocations is not a multiple of %d (truncated entry)", len(entries), mcfgAllocLen)
	}
	m := &MCFG{Header: h}
	for i := 0; i < len(entries); i += mcfgAllocLen {
		e := entries[i : i+mcfgAllocLen]
		a := MCFGAllocation{
			Base:     binary.LittleEndian.Uint64(e[0:8]),
			Segment:  binary.LittleEndian.Uint16(e[8:10]),
			StartBus: e[10],
			EndBus:   e[11],
		}
		n := i / mcfgAllocLen
		if err := a.check(); err != nil {
			return nil, fmt.Errorf("acpi MCFG: allocation %d (%v): %w", n, a, err)
		}
		for j, o := range m.Allocations {
			if o.Segment == a.Segment && a.StartBus <= o.EndBus && o.StartBus <= a.EndBus {
				return nil, fmt.Errorf("acpi MCFG: allocation %d (%v) overlaps allocation %d (%v)", n, a, j, o)
			}
		}
		m.Allocations = append(m.Allocations, a)
	}
	return m, nil
}

func (a MCFGAllocation) check() error {
	if a.StartBus > a.EndBus {
		return fmt.Errorf("start bus %#x above end bus %#x", a.StartBus, a.EndBus)
	}
	if a.Base%ECAMBusSize != 0 {
		return fmt.Errorf("base %#x is not 1 MiB aligned", a.Base)
	}
	if end := a.Base + (uint64(a.EndBus)+1)*ECAMBusSize; end != 0 && end-1 < a.Base {
		return fmt.Errorf("window wraps the address space")
	}
	return nil
}

// Find returns the window that decodes segment seg, bus bus.
func (m *MCFG) Find(seg uint16, bus uint8) (MCFGAllocation, bool) {
	for _, a := range m.Allocations {
		if a.Covers(seg, bus) {
			return a, true
		}
	}
	return MCFGAllocation{}, false
}

// Marshal encodes the allocations as a complete MCFG table with a valid
// checksum, the way firmware would present them.
func (m *MCFG) Marshal() []byte {
	body := make([]byte, mcfgReservedLen+len(m.Allocations)*mcfgAllocLen)
	for i, a := range m.Allocations {
		e := body[mcfgReservedLen+i*mcfgAllocLen:]
		binary.LittleEndian.PutUint64(e[0:8], a.Base)
		binary.LittleEndian.PutUint16(e[8:10], a.Segment)
		e[10] = a.StartBus
		e[11] = a.EndBus
	}
	rev := m.Header.Revision
	if rev == 0 {
		rev = 1
	}
	return Build("MCFG", rev, body)
}
