package pci

import (
	"fmt"
	"slices"
)

// MSI capability registers (PCI Local Bus Specification 3.0, 6.8.1).
const (
	msiControl = 0x02 // 16

	msiCtlEnable     = 1 << 0
	msiCtlMMCShift   = 1 // multiple message capable, log2, bits 3:1
	msiCtlMMEShift   = 4 // multiple message enable, log2, bits 6:4
	msiCtl64Bit      = 1 << 7
	msiCtlPerVecMask = 1 << 8
)

// MSI is a decoded MSI capability.
type MSI struct {
	Offset        int
	Enabled       bool
	Vectors       int // messages the function can request: 1..32
	Allocated     int // messages enabled by software
	Addr64        bool
	PerVectorMask bool
}

// FindMSI finds and decodes a's MSI capability; ok is false, with no
// error, when the function has none.
func FindMSI(c Config, a Addr) (m MSI, ok bool, err error) {
	off, ok, err := capOffset(c, a, CapMSI)
	if !ok || err != nil {
		return MSI{}, false, err
	}
	m, err = ReadMSI(c, a, off)
	return m, err == nil, err
}

// FindMSIX finds and decodes a's MSI-X capability; ok is false, with no
// error, when the function has none.
func FindMSIX(c Config, a Addr) (m MSIX, ok bool, err error) {
	off, ok, err := capOffset(c, a, CapMSIX)
	if !ok || err != nil {
		return MSIX{}, false, err
	}
	m, err = ReadMSIX(c, a, off)
	return m, err == nil, err
}

// capOffset is where a's standard capability id sits.
func capOffset(c Config, a Addr, id uint16) (int, bool, error) {
	caps, err := Capabilities(c, a)
	if err != nil {
		return 0, false, err
	}
	cp, ok := FindCap(caps, id)
	return cp.Offset, ok, nil
}

// ReadMSI decodes the MSI capability at off.
func ReadMSI(c Config, a Addr, off int) (MSI, error) {
	ctl, err := read16(c, a, off+msiControl)
	if err != nil {
		return MSI{}, fmt.Errorf("pci %v: msi control at %#x: %w", a, off, err)
	}
	if ctl == 0xffff {
		return MSI{}, fmt.Errorf("pci %v: msi control at %#x reads all ones: %w", a, off, ErrAbsent)
	}
	return MSI{
		Offset:        off,
		Enabled:       ctl&msiCtlEnable != 0,
		Vectors:       1 << (ctl >> msiCtlMMCShift & 7),
		Allocated:     1 << (ctl >> msiCtlMMEShift & 7),
		Addr64:        ctl&msiCtl64Bit != 0,
		PerVectorMask: ctl&msiCtlPerVecMask != 0,
	}, nil
}

// MSI-X capability registers (PCI Local Bus Specification 3.0, 6.8.2).
const (
	msixControl = 0x02 // 16
	msixTable   = 0x04 // 32: offset | BIR
	msixPBA     = 0x08 // 32: offset | BIR

	msixCtlSizeMask = 0x7ff // table size - 1
	msixCtlMask     = 1 << 14
	msixCtlEnable   = 1 << 15
	msixBIRMask     = 0x7

	// MSIXEntrySize is the size of one MSI-X table entry: message address
	// low and high, data, vector control.
	MSIXEntrySize = 16
)

// MSIX is a decoded MSI-X capability: where the vector table and the
// pending bit array live (BAR index and offset into it).
type MSIX struct {
	Offset       int
	Enabled      bool
	FunctionMask bool
	TableSize    int // entries, 1..2048
	TableBIR     int
	TableOffset  uint32
	PBABIR       int
	PBAOffset    uint32
}

// ReadMSIX decodes the MSI-X capability at off. A BAR indicator above 5 is
// an error.
func ReadMSIX(c Config, a Addr, off int) (MSIX, error) {
	ctl, err := read16(c, a, off+msixControl)
	if err != nil {
		return MSIX{}, fmt.Errorf("pci %v: msi-x control at %#x: %w", a, off, err)
	}
	if ctl == 0xffff {
		return MSIX{}, fmt.Errorf("pci %v: msi-x control at %#x reads all ones: %w", a, off, ErrAbsent)
	}
	tbl, err := read32(c, a, off+msixTable)
	if err != nil {
		return MSIX{}, fmt.Errorf("pci %v: msi-x table at %#x: %w", a, off, err)
	}
	pba, err := read32(c, a, off+msixPBA)
	if err != nil {
		return MSIX{}, fmt.Errorf("pci %v: msi-x pba at %#x: %w", a, off, err)
	}
	m := MSIX{
		Offset:       off,
		Enabled:      ctl&msixCtlEnable != 0,
		FunctionMask: ctl&msixCtlMask != 0,
		TableSize:    int(ctl&msixCtlSizeMask) + 1,
		TableBIR:     int(tbl & msixBIRMask),
		TableOffset:  tbl &^ msixBIRMask,
		PBABIR:       int(pba & msixBIRMask),
		PBAOffset:    pba &^ msixBIRMask,
	}
	if m.TableBIR > 5 || m.PBABIR > 5 {
		return m, fmt.Errorf("pci %v: msi-x at %#x: reserved BAR indicator (table %d, pba %d)", a, off, m.TableBIR, m.PBABIR)
	}
	return m, nil
}

// PBASize is the size of the pending bit array: one bit per entry, in
// whole qwords.
func (m MSIX) PBASize() uint64 { return uint64(m.TableSize+63) / 64 * 8 }

// Check verifies that the table and the pending bit array lie inside
// memory BARs of bars.
func (m MSIX) Check(bars [6]BAR) error {
	within := func(what string, bir int, off, size uint64) error {
		b := bars[bir]
		if !b.IsMem() {
			return fmt.Errorf("msi-x %s in bar%d, which is not a memory BAR (%v)", what, bir, b.Kind)
		}
		if off+size > b.Size {
			return fmt.Errorf("msi-x %s [%#x, %#x) runs past bar%d's %#x bytes", what, off, off+size, bir, b.Size)
		}
		return nil
	}
	if err := within("table", m.TableBIR, uint64(m.TableOffset), uint64(m.TableSize)*MSIXEntrySize); err != nil {
		return err
	}
	return within("pba", m.PBABIR, uint64(m.PBAOffset), m.PBASize())
}

// MSI message registers after the control word (PCI Local Bus
// Specification 3.0, 6.8.1.4-6.8.1.6): the address, its upper half when
// the function takes 64-bit addresses, then the 16-bit data.
const (
	msiAddrLow = 0x04
	msiAddrHi  = 0x08
	msiData32  = 0x08
	msiData64  = 0x0c
)

// Program points the function's MSI at addr with data, one message
// (Multiple Message Enable 0), and enables it. MSI is disabled while the
// message changes so no half-written message is ever sent.
func (m MSI) Program(c Config, a Addr, addr uint64, data uint16) error {
	if addr>>32 != 0 && !m.Addr64 {
		return fmt.Errorf("pci %v: msi address %#x needs 64 bits, the function has 32", a, addr)
	}
	ctl, err := read16(c, a, m.Offset+msiControl)
	if err != nil {
		return fmt.Errorf("pci %v: msi: %w", a, err)
	}
	ctl &^= msiCtlEnable | 7<<msiCtlMMEShift
	dataOff := msiData32
	if m.Addr64 {
		dataOff = msiData64
	}
	writes := []struct {
		off, size int
		v         uint32
	}{
		{msiControl, 2, uint32(ctl)},
		{msiAddrLow, 4, uint32(addr)},
		{dataOff, 2, uint32(data)},
		{msiControl, 2, uint32(ctl | msiCtlEnable)},
	}
	if m.Addr64 {
		writes = slices.Insert(writes, 2, struct {
			off, size int
			v         uint32
		}{msiAddrHi, 4, uint32(addr >> 32)})
	}
	for _, w := range writes {
		if err := c.WriteConfig(a, m.Offset+w.off, w.size, w.v); err != nil {
			return fmt.Errorf("pci %v: msi: %w", a, err)
		}
	}
	return nil
}

// Disable clears MSI Enable: the function signals no more messages.
func (m MSI) Disable(c Config, a Addr) error {
	ctl, err := read16(c, a, m.Offset+msiControl)
	if err == nil {
		err = c.WriteConfig(a, m.Offset+msiControl, 2, uint32(ctl&^msiCtlEnable))
	}
	if err != nil {
		return fmt.Errorf("pci %v: msi: %w", a, err)
	}
	return nil
}
