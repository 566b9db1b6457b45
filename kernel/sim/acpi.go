package sim

import (
	"encoding/binary"
	"math/bits"

	"github.com/ether9/ether9/kernel/acpi"
	"github.com/ether9/ether9/kernel/sim/vtd"
	"github.com/ether9/ether9/pci"
)

// DMAR returns the machine's ACPI DMAR table: the host address width, one
// DRHD per scoped unit with its device scope, and last, as the VT-d
// specification wants, the catch-all DRHD at VTdBase (INCLUDE_PCI_ALL).
// Scope paths are written from the bridges on the bus when it is called,
// as firmware writes them after numbering the buses.
func (m *Machine) DMAR() []byte {
	capReg := m.VTd.Read64(vtd.CAP)
	ecapReg := m.VTd.Read64(vtd.ECAP)
	haw := byte(capReg >> vtd.CAP_MGAW_SHIFT & 0x3f) // the table stores width - 1
	var flags byte
	if ecapReg&vtd.ECAP_IR != 0 {
		flags |= acpi.DMARIntrRemap
	}
	body := make([]byte, 12)
	body[0] = haw
	body[1] = flags
	for _, r := range m.scoped {
		var scopes []byte
		for _, a := range r.Scope.Endpoints {
			scopes = append(scopes, m.scopeEntry(acpi.ScopePCIEndpoint, a)...)
		}
		for _, a := range r.Scope.Bridges {
			scopes = append(scopes, m.scopeEntry(acpi.ScopePCIBridge, a)...)
		}
		body = append(body, drhd(0, r.Unit, r.Base, scopes)...)
	}
	// A unit that remaps interrupts lists the I/O APICs whose messages it
	// remaps (VT-d 8.3.1.1); the catch-all unit has the machine's one.
	var ioapic []byte
	if ecapReg&vtd.ECAP_IR != 0 {
		ioapic = []byte{acpi.ScopeIOAPIC, 8, 0, 0, IOAPICID, uint8(IOAPICSource >> 8), uint8(IOAPICSource >> 3 & 0x1f), uint8(IOAPICSource & 7)}
	}
	body = append(body, drhd(acpi.DRHDIncludePCIAll, m.VTd, VTdBase, ioapic)...)
	// Reserved regions follow the units (VT-d 8.1).
	for _, r := range m.cfg.Reserved {
		var scopes []byte
		for _, a := range r.Endpoints {
			scopes = append(scopes, m.scopeEntry(acpi.ScopePCIEndpoint, a)...)
		}
		body = append(body, rmrr(r.Base, r.Limit, scopes)...)
	}
	return acpi.Build("DMAR", 1, body)
}

// rmrr encodes one reserved memory region reporting structure (VT-d 8.4).
func rmrr(base, limit uint64, scopes []byte) []byte {
	b := make([]byte, 24, 24+len(scopes))
	binary.LittleEndian.PutUint16(b[0:], 1) // type: RMRR
	binary.LittleEndian.PutUint16(b[2:], uint16(24+len(scopes)))
	binary.LittleEndian.PutUint16(b[6:], 0) // segment
	binary.LittleEndian.PutUint64(b[8:], base)
	binary.LittleEndian.PutUint64(b[16:], limit)
	return append(b, scopes...)
}

// The machine's I/O APIC, as its DMAR names it: id 0, requester id
// f0:1f.0 (where QEMU's q35 puts its own).
const (
	IOAPICID     = 0
	IOAPICSource = 0xf0f8
)

// drhd encodes one DMA-remapping hardware unit definition.
func drhd(flags byte, u *vtd.Unit, base uint64, scopes []byte) []byte {
	b := make([]byte, 16, 16+len(scopes))
	binary.LittleEndian.PutUint16(b[0:], 0) // type: DRHD
	binary.LittleEndian.PutUint16(b[2:], uint16(16+len(scopes)))
	b[4] = flags
	b[5] = regSetOrder(u.Read64(vtd.CAP))   // register set: 2^N pages
	binary.LittleEndian.PutUint16(b[6:], 0) // segment
	binary.LittleEndian.PutUint64(b[8:], base)
	return append(b, scopes...)
}

// maxScopeHops is the longest path a device scope's length byte holds.
const maxScopeHops = (255 - 6) / 2

// scopeEntry encodes a device scope naming the function at a by its path
// from the root bus: each bridge above it, found by its secondary bus,
// then a itself.
func (m *Machine) scopeEntry(typ uint8, a pci.Addr) []byte {
	start, path := m.scopePath(a)
	b := []byte{typ, byte(6 + 2*len(path)), 0, 0, 0, start}
	for _, h := range path {
		b = append(b, h.Dev, h.Fn)
	}
	return b
}

// scopePath returns the start bus and the (device, function) hops from
// there to a. A bus no bridge leads to is a root bus: the path starts on
// it.
func (m *Machine) scopePath(a pci.Addr) (uint8, []acpi.PathEntry) {
	parents := make(map[uint8]pci.Addr) // secondary bus -> the bridge leading to it
	for _, f := range m.Bus.Functions() {
		if f.Seg != a.Seg {
			continue
		}
		hdr, err := m.Bus.ReadConfig(f, cfgHeader, 1)
		if err != nil || hdr&^headerMulti != 1 {
			continue
		}
		if sec, err := m.Bus.ReadConfig(f, cfgSecondary, 1); err == nil && sec != 0 && uint8(sec) > f.Bus {
			parents[uint8(sec)] = f
		}
	}
	path := []acpi.PathEntry{{Dev: a.Dev, Fn: a.Fn}}
	bus := a.Bus
	// Secondary buses lie above their bridge's, so the climb ends; a
	// scope's one-byte length bounds the path.
	for len(path) < maxScopeHops {
		p, ok := parents[bus]
		if !ok {
			break
		}
		path = append([]acpi.PathEntry{{Dev: p.Dev, Fn: p.Fn}}, path...)
		bus = p.Bus
	}
	return bus, path
}

// regSetOrder returns N such that 2^N pages hold the unit's registers, up
// to the last fault recording register.
func regSetOrder(capReg uint64) byte {
	fro := capReg >> vtd.CAP_FRO_SHIFT & 0x3ff * 16
	nfr := capReg>>vtd.CAP_NFR_SHIFT&0xff + 1
	pages := (fro + nfr*16 + 4095) / 4096
	return byte(bits.Len64(pages - 1))
}

// MCFG returns the machine's ACPI MCFG table: one ECAM window for segment
// 0, buses 0 to 255.
func (m *Machine) MCFG() []byte {
	body := make([]byte, 8+16)
	e := body[8:]
	binary.LittleEndian.PutUint64(e[0:], ECAMBase)
	binary.LittleEndian.PutUint16(e[8:], 0) // segment
	e[10] = 0                               // start bus
	e[11] = 255                             // end bus
	return acpi.Build("MCFG", 1, body)
}
