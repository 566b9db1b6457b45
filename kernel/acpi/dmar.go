package acpi

import (
	"encoding/binary"
	"fmt"
)

// DMAR table layout (VT-d specification, chapter 8).
const (
	dmarFixedLen = 12 // host address width, flags, 10 reserved bytes

	// Remapping structure types.
	dmarTypeDRHD = 0
	dmarTypeRMRR = 1

	drhdFixedLen  = 16
	rmrrFixedLen  = 24
	scopeFixedLen = 6
)

// DMAR flags.
const (
	DMARIntrRemap      = 1 << 0 // platform supports interrupt remapping
	DMARX2APICOptOut   = 1 << 1 // firmware asks the OS not to enable x2APIC
	DMARCtrlPlatformIn = 1 << 2 // DMA control opt-in
)

// DRHDIncludePCIAll marks the catch-all unit of a segment: it translates
// every device of the segment not claimed by another unit's scope.
const DRHDIncludePCIAll = 1 << 0

// Device scope types.
const (
	ScopePCIEndpoint = 1
	ScopePCIBridge   = 2
	ScopeIOAPIC      = 3
	ScopeHPET        = 4
	ScopeACPINS      = 5
)

// DMAR is a parsed DMA Remapping Reporting table.
type DMAR struct {
	Header        Header
	HostAddrWidth int   // physical address width in bits (the table stores width-1)
	Flags         uint8 // DMARIntrRemap, DMARX2APICOptOut, DMARCtrlPlatformIn
	Units         []DRHD
	Reserved      []RMRR
	Skipped       int // remapping structures of other types, skipped by length
}

// DRHD is one DMA-remapping hardware unit definition.
type DRHD struct {
	Flags   uint8
	Segment uint16
	Base    uint64 // register base address
	Size    uint64 // bytes of the register set: 4 KiB << the size field
	Scopes  []DeviceScope
}

// IncludeAll reports whether the unit catches every device of its segment.
func (d DRHD) IncludeAll() bool { return d.Flags&DRHDIncludePCIAll != 0 }

// IOAPIC returns the requester id of the I/O APIC with the given id when
// the unit's scope lists it: the unit remaps that I/O APIC's interrupts.
// An I/O APIC sits on its start bus, so its path is one hop (VT-d
// 8.3.1.1); a longer path is not one we can resolve without walking
// bridges, and is reported as absent.
func (d DRHD) IOAPIC(id uint8) (uint16, bool) {
	for _, s := range d.Scopes {
		if s.Type == ScopeIOAPIC && s.EnumID == id && len(s.Path) == 1 {
			p := s.Path[0]
			return uint16(s.StartBus)<<8 | uint16(p.Dev)<<3 | uint16(p.Fn), true
		}
	}
	return 0, false
}

// RMRR is a reserved memory region that firmware keeps using for DMA
// (USB legacy emulation, integrated graphics) after the OS takes over.
type RMRR struct {
	Segment uint16
	Base    uint64
	Limit   uint64 // last byte, inclusive
	Scopes  []DeviceScope
}

// DeviceScope names a device (or a bridge and everything behind it) by the
// path from its start bus.
type DeviceScope struct {
	Type     uint8
	EnumID   uint8 // I/O APIC id, HPET number or ACPI namespace device
	StartBus uint8
	Path     []PathEntry
}

// PathEntry is one hop of a device scope path.
type PathEntry struct {
	Dev, Fn uint8
}

// ParseDMAR parses a DMAR table. Structures of unknown type are skipped by
// their length; truncated or inconsistent ones are errors.
func ParseDMAR(b []byte) (*DMAR, error) {
	h, body, err := ParseHeader(b, "DMAR")
	if err != nil {
		return nil, err
	}
	if len(body) < dmarFixedLen {
		return nil, fmt.Errorf("acpi DMAR: body of %d bytes, need %d", len(body), dmarFixedLen)
	}
	d := &DMAR{
		Header:        h,
		HostAddrWidth: int(body[0]) + 1,
		Flags:         body[1],
	}
	if d.HostAddrWidth < 32 || d.HostAddrWidth > 64 {
		return nil, fmt.Errorf("acpi DMAR: host address width %d out of range", d.HostAddrWidth)
	}
	off := HeaderLen + dmarFixedLen
	for rest := body[dmarFixedLen:]; len(rest) > 0; {
		if len(rest) < 4 {
			return nil, fmt.Errorf("acpi DMAR: structure at %#x truncated: %d bytes", off, len(rest))
		}
		typ := binary.LittleEndian.Uint16(rest[0:2])
		n := int(binary.LittleEndian.Uint16(rest[2:4]))
		if n < 4 || n > len(rest) {
			return nil, fmt.Errorf("acpi DMAR: structure type %d at %#x: length %d, %d bytes left", typ, off, n, len(rest))
		}
		s := rest[:n]
		switch typ {
		case dmarTypeDRHD:
			u, err := parseDRHD(s)
			if err != nil {
				return nil, fmt.Errorf("acpi DMAR: DRHD at %#x: %w", off, err)
			}
			d.Units = append(d.Units, u)
		case dmarTypeRMRR:
			r, err := parseRMRR(s)
			if err != nil {
				return nil, fmt.Errorf("acpi DMAR: RMRR at %#x: %w", off, err)
			}
			d.Reserved = append(d.Reserved, r)
		default:
			d.Skipped++
		}
		rest = rest[n:]
		off += n
	}
	return d, nil
}

func parseDRHD(s []byte) (DRHD, error) {
	if len(s) < drhdFixedLen {
		return DRHD{}, fmt.Errorf("length %d, need %d", len(s), drhdFixedLen)
	}
	u := DRHD{
		Flags:   s[4],
		Segment: binary.LittleEndian.Uint16(s[6:8]),
		Base:    binary.LittleEndian.Uint64(s[8:16]),
		Size:    4096 << (s[5] & 0xf), // bits 3:0: 2^N pages
	}
	if u.Base == 0 || u.Base&0xfff != 0 {
		return DRHD{}, fmt.Errorf("register base %#x not a page address", u.Base)
	}
	scopes, err := parseScopes(s[drhdFixedLen:])
	if err != nil {
		return DRHD{}, err
	}
	u.Scopes = scopes
	return u, nil
}

func parseRMRR(s []byte) (RMRR, error) {
	if len(s) < rmrrFixedLen {
		return RMRR{}, fmt.Errorf("length %d, need %d", len(s), rmrrFixedLen)
	}
	r := RMRR{
		Segment: binary.LittleEndian.Uint16(s[6:8]),
		Base:    binary.LittleEndian.Uint64(s[8:16]),
		Limit:   binary.LittleEndian.Uint64(s[16:24]),
	}
	if r.Limit < r.Base {
		return RMRR{}, fmt.Errorf("limit %#x below base %#x", r.Limit, r.Base)
	}
	scopes, err := parseScopes(s[rmrrFixedLen:])
	if err != nil {
		return RMRR{}, err
	}
	r.Scopes = scopes
	return r, nil
}

func parseScopes(b []byte) ([]DeviceScope, error) {
	var out []DeviceScope
	for off := 0; off < len(b); {
		rest := b[off:]
		if len(rest) < 2 {
			return nil, fmt.Errorf("device scope at +%d truncated", off)
		}
		n := int(rest[1])
		if n < scopeFixedLen || n > len(rest) {
			return nil, fmt.Errorf("device scope at +%d: length %d, %d bytes left", off, n, len(rest))
		}
		if (n-scopeFixedLen)%2 != 0 {
			return nil, fmt.Errorf("device scope at +%d: path of odd length %d", off, n-scopeFixedLen)
		}
		s := DeviceScope{Type: rest[0], EnumID: rest[4], StartBus: rest[5]}
		for p := scopeFixedLen; p < n; p += 2 {
			e := PathEntry{Dev: rest[p], Fn: rest[p+1]}
			if e.Dev > 31 || e.Fn > 7 {
				return nil, fmt.Errorf("device scope at +%d: path entry %02x.%x out of range", off, e.Dev, e.Fn)
			}
			s.Path = append(s.Path, e)
		}
		out = append(out, s)
		off += n
	}
	return out, nil
}
