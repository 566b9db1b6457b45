package iommu

import (
	"fmt"

	"github.com/ether9/ether9/kernel"
)

// Caps is the decoded CAP and ECAP of a remapping unit.
type Caps struct {
	Version uint32 // VER: major << 4 | minor
	CAP     uint64
	ECAP    uint64

	Domains  int   // ND: 2^(4+2*ND) domain ids
	RWBF     bool  // write buffer flush required after table updates
	CM       bool  // caching mode: non-present entries may be cached
	PMR      bool  // CAP.PLMR or PHMR: protected memory regions exist
	SAGAW    uint8 // supported adjusted guest address widths: bit 1 39-bit, bit 2 48-bit
	MGAW     int   // maximum guest address width in bits
	ZLR      bool  // zero-length reads need no read permission
	FRO      uint32
	SLLPS    uint8  // second-level large pages: bit 0 2 MiB, bit 1 1 GiB
	PSI      bool   // page-selective IOTLB invalidation
	NFR      int    // fault recording registers
	MAMV     uint   // largest address mask for page-selective invalidation
	DWD, DRD bool   // write and read draining
	Coherent bool   // ECAP.C: the unit snoops CPU caches when walking tables
	QI       bool   // queued invalidation
	IR       bool   // interrupt remapping
	EIM      bool   // extended interrupt mode: entries name 32-bit x2APIC ids
	PT       bool   // pass-through translation type
	IRO      uint32 // byte offset of the IVA register; the IOTLB register follows at +8
}

// ReadCaps reads and decodes the capabilities of the unit behind regs.
func ReadCaps(regs kernel.Regs) Caps {
	return DecodeCaps(regs.Read32(regVER), regs.Read64(regCAP), regs.Read64(regECAP))
}

// DecodeCaps decodes VER, CAP and ECAP.
func DecodeCaps(ver uint32, capReg, ecap uint64) Caps {
	bits := func(v uint64, hi, lo uint) uint64 { return v >> lo & (1<<(hi-lo+1) - 1) }
	return Caps{
		Version:  ver & 0xff,
		CAP:      capReg,
		ECAP:     ecap,
		Domains:  1 << (4 + 2*bits(capReg, 2, 0)),
		RWBF:     bits(capReg, 4, 4) != 0,
		CM:       bits(capReg, 7, 7) != 0,
		PMR:      bits(capReg, 6, 5) != 0,
		SAGAW:    uint8(bits(capReg, 12, 8)),
		MGAW:     int(bits(capReg, 21, 16)) + 1,
		ZLR:      bits(capReg, 22, 22) != 0,
		FRO:      uint32(bits(capReg, 33, 24)) * 16,
		SLLPS:    uint8(bits(capReg, 37, 34)),
		PSI:      bits(capReg, 39, 39) != 0,
		NFR:      int(bits(capReg, 47, 40)) + 1,
		MAMV:     uint(bits(capReg, 53, 48)),
		DWD:      bits(capReg, 54, 54) != 0,
		DRD:      bits(capReg, 55, 55) != 0,
		Coherent: bits(ecap, 0, 0) != 0,
		QI:       bits(ecap, 1, 1) != 0,
		IR:       bits(ecap, 3, 3) != 0,
		EIM:      bits(ecap, 4, 4) != 0,
		PT:       bits(ecap, 6, 6) != 0,
		IRO:      uint32(bits(ecap, 17, 8)) * 16,
	}
}

// Levels returns the page-table depths the unit supports, deepest first.
func (c Caps) Levels() []int {
	var l []int
	if c.SAGAW&(1<<2) != 0 {
		l = append(l, 4)
	}
	if c.SAGAW&(1<<1) != 0 {
		l = append(l, 3)
	}
	return l
}

// Large2M reports whether second-level 2 MiB pages are supported.
func (c Caps) Large2M() bool { return c.SLLPS&1 != 0 }

func (c Caps) String() string {
	return fmt.Sprintf("ver %d.%d domains %d sagaw %#x mgaw %d sllps %#x psi %v mamv %d nfr %d fro %#x cm %v rwbf %v coherent %v qi %v ir %v eim %v iro %#x",
		c.Version>>4, c.Version&0xf, c.Domains, c.SAGAW, c.MGAW, c.SLLPS, c.PSI, c.MAMV, c.NFR, c.FRO, c.CM, c.RWBF, c.Coherent, c.QI, c.IR, c.EIM, c.IRO)
}

// RegisterInvalidation reports whether the unit takes context-cache and
// IOTLB invalidations through its registers: not from major version 6,
// which invalidates through the queue alone (VT-d 3.3, 6.5).
func (c Caps) RegisterInvalidation() bool { return c.Version>>4 < 6 }

func (c Caps) check() error {
	if c.CAP == ^uint64(0) || c.CAP == 0 {
		return fmt.Errorf("CAP reads %#x: no remapping unit at this address", c.CAP)
	}
	if len(c.Levels()) == 0 {
		return fmt.Errorf("SAGAW %#x offers neither 3- nor 4-level tables", c.SAGAW)
	}
	if c.FRO == 0 {
		return fmt.Errorf("fault record offset %#x: register layout invalid", c.FRO)
	}
	if !c.RegisterInvalidation() {
		if !c.QI {
			return fmt.Errorf("version %d.%d has no register-based invalidation, and ECAP.QI no queue", c.Version>>4, c.Version&0xf)
		}
		return nil // IRO names registers the unit does not have
	}
	if c.IRO == 0 {
		return fmt.Errorf("IOTLB offset %#x: register layout invalid", c.IRO)
	}
	return nil
}
