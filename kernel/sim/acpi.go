package sim

import (
	"encoding/binary"
	"math/bits"

	"github.com/ether9/ether9/kernel/acpi"
	"github.com/ether9/ether9/kernel/sim/vtd"
)

// DMAR returns the machine's ACPI DMAR table: the host address width and
// one DRHD at VTdBase covering every PCI device (INCLUDE_PCI_ALL).
func (m *Machine) DMAR() []byte {
	capReg := m.VTd.Read64(vtd.CAP)
	ecapReg := m.VTd.Read64(vtd.ECAP)
	haw := byte(capReg >> vtd.CAP_MGAW_SHIFT & 0x3f) // the table stores width - 1
	var flags byte
	if ecapReg&vtd.ECAP_IR != 0 {
		flags |= 1 // INTR_REMAP
	}
	body := make([]byte, 12+16)
	body[0] = haw
	body[1] = flags
	drhd := body[12:]
	binary.LittleEndian.PutUint16(drhd[0:], 0)  // type: DRHD
	binary.LittleEndian.PutUint16(drhd[2:], 16) // length
	drhd[4] = 1                                 // INCLUDE_PCI_ALL
	drhd[5] = regSetOrder(capReg)               // register set: 2^N pages
	binary.LittleEndian.PutUint16(drhd[6:], 0)  // segment
	binary.LittleEndian.PutUint64(drhd[8:], VTdBase)
	return acpi.Build("DMAR", 1, body)
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
