package nicmodel

import (
	"encoding/binary"

	"github.com/ether9/ether9/kernel/sim"
)

// PCI capability ids (PCI Local Bus 3.0) and extended capability ids (PCI
// Express Base 2.0) the Intel gigabit parts carry.
const (
	CapPM   = 0x01
	CapMSI  = 0x05
	CapPCIe = 0x10
	CapMSIX = 0x11
	CapAF   = 0x13
	ExtAER  = 0x0001
	ExtDSN  = 0x0003
	ExtLTR  = 0x0018
)

// ClassEthernet is the class code of an Ethernet controller.
const ClassEthernet = 0x020000

// AddPM adds the power management capability these parts share: PME from
// D0, D3hot and D3cold, PM spec 1.2, no soft reset on D3hot to D0.
func AddPM(c *sim.ConfigSpace) {
	pm := make([]byte, 6)
	binary.LittleEndian.PutUint16(pm[0:], 0xc823)
	binary.LittleEndian.PutUint16(pm[2:], 0x0008)
	c.AddCap(CapPM, pm)
}

// AddMSI adds an MSI capability whose message control word is ctl; size is
// the body length, which grows with 64-bit addresses and per-vector masks.
func AddMSI(c *sim.ConfigSpace, ctl uint16, size int) {
	msi := make([]byte, size)
	binary.LittleEndian.PutUint16(msi[0:], ctl)
	c.AddCap(CapMSI, msi)
}

// AddMSIX adds an MSI-X capability for vectors entries, MSI-X Enable and
// Function Mask writable: the table at offset 0 of BAR bar, the pending
// bit array at offset pba of it. It returns the table, its messages sent
// with send (none if nil).
func AddMSIX(c *sim.ConfigSpace, vectors, bar int, pba uint32, send Messenger) MSIXTable {
	x := make([]byte, 10)
	binary.LittleEndian.PutUint16(x[0:], uint16(vectors-1))
	binary.LittleEndian.PutUint32(x[2:], uint32(bar))
	binary.LittleEndian.PutUint32(x[6:], pba|uint32(bar))
	off := c.AddCap(CapMSIX, x)
	c.SetWriteMask(off+3, []byte{(msixCtlEnable | msixCtlFnMask) >> 8})
	t := NewMSIXTable(vectors, pba)
	t.Connect(c, off, send)
	return t
}

// PCIe is what differs between parts in the PCI Express capability.
type PCIe struct {
	DevCap     uint32 // device capabilities: max payload, role-based errors
	LinkCap    uint32 // link capabilities: speed, width, ASPM
	LinkStatus uint16 // negotiated speed and width
}

// AddPCIe adds a version 2 endpoint PCI Express capability with max read
// request 512 B and relaxed ordering enabled in device control.
func AddPCIe(c *sim.ConfigSpace, p PCIe) {
	le := binary.LittleEndian
	e := make([]byte, 0x3c-2) // offsets below are from the capability start
	le.PutUint16(e[0x02-2:], 0x0002)
	le.PutUint32(e[0x04-2:], p.DevCap)
	le.PutUint16(e[0x08-2:], 0x2810)
	le.PutUint32(e[0x0c-2:], p.LinkCap)
	le.PutUint16(e[0x12-2:], p.LinkStatus)
	c.AddCap(CapPCIe, e)
}

// AddDSN adds the device serial number extended capability: the EUI-64
// made from mac by inserting FF-FE, least significant byte first; zero for
// a part with no address.
func AddDSN(c *sim.ConfigSpace, mac [6]byte) {
	dsn := make([]byte, 8)
	if mac != ([6]byte{}) {
		dsn = []byte{mac[5], mac[4], mac[3], 0xfe, 0xff, mac[2], mac[1], mac[0]}
	}
	c.AddExtCap(ExtDSN, 1, dsn)
}
