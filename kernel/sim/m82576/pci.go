package m82576

import (
	"encoding/binary"
	"fmt"

	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/pci"
)

// PCI identity and BAR layout.
const (
	vendorID  = 0x8086
	deviceID  = 0x10c9
	subVendor = 0x8086
	subDevice = 0xa03c
	revision  = 0x01

	ClassEthernet = 0x020000

	barMMIO = 0 // 128 KiB registers
	barIO   = 2 // 32 B: IOADDR, IODATA
	barMSIX = 3 // 16 KiB: MSI-X table and PBA

	ioSize      = 32
	msixSize    = 16 << 10
	msixVectors = 10
	msixPBA     = 0x2000
	ioAddr      = 0x00
	ioData      = 0x04
)

// Capability ids.
const (
	capPM   = 0x01
	capMSI  = 0x05
	capPCIe = 0x10
	capMSIX = 0x11
	extAER  = 0x0001
	extDSN  = 0x0003
)

type pciState struct {
	cfg *sim.ConfigSpace
}

func (p *pciState) init(n *NIC) {
	c := sim.NewConfigSpace(vendorID, deviceID, ClassEthernet, 0)
	c.SetSubsystem(subVendor, subDevice)
	c.SetRevision(revision)
	c.SetBAR(barMMIO, pci.BARMem32, mmioSize, false)
	c.SetBAR(barIO, pci.BARIO, ioSize, false)
	c.SetBAR(barMSIX, pci.BARMem32, msixSize, false)
	le := binary.LittleEndian

	pm := make([]byte, 6)
	le.PutUint16(pm[0:], 0xc823) // PME from D0/D3hot/D3cold, PM spec 1.2
	le.PutUint16(pm[2:], 0x0008) // no soft reset
	c.AddCap(capPM, pm)

	msi := make([]byte, 20)
	le.PutUint16(msi[0:], 0x0180) // 64-bit address, per-vector masking, one vector
	c.AddCap(capMSI, msi)

	x := make([]byte, 10)
	le.PutUint16(x[0:], msixVectors-1)
	le.PutUint32(x[2:], barMSIX)         // table at offset 0 of BAR3
	le.PutUint32(x[6:], msixPBA|barMSIX) // PBA at 0x2000 of BAR3
	c.AddCap(capMSIX, x)

	e := make([]byte, 0x3c-2)
	le.PutUint16(e[0x02-2:], 0x0002)     // capability version 2, endpoint
	le.PutUint32(e[0x04-2:], 0x00008002) // max payload 512 B, role-based errors
	le.PutUint16(e[0x08-2:], 0x2810)     // max read request 512 B, relaxed ordering
	le.PutUint32(e[0x0c-2:], 0x00000c41) // 2.5 GT/s, x4, ASPM L0s and L1
	le.PutUint16(e[0x12-2:], 0x0041)     // link at 2.5 GT/s, x4
	c.AddCap(capPCIe, e)

	c.AddExtCap(extAER, 1, make([]byte, 0x2c))
	dsn := []byte{n.mac[5], n.mac[4], n.mac[3], 0xfe, 0xff, n.mac[2], n.mac[1], n.mac[0]}
	c.AddExtCap(extDSN, 1, dsn)
	p.cfg = c
}

// Config implements sim.Device.
func (n *NIC) Config() *sim.ConfigSpace { return n.pci.cfg }

// MMIORead implements sim.Device.
func (n *NIC) MMIORead(bar int, off uint32, size int) uint64 {
	switch bar {
	case barMMIO:
		v := uint64(n.read32(off))
		if size == 8 {
			v |= uint64(n.read32(off+4)) << 32
		}
		return v
	case barIO:
		n.mu.Lock()
		a := n.ioaddr
		n.mu.Unlock()
		switch off {
		case ioAddr:
			return uint64(a)
		case ioData:
			return uint64(n.read32(a))
		}
	case barMSIX:
		n.mu.Lock()
		defer n.mu.Unlock()
		if i := off / 4; i < uint32(len(n.msix)) {
			v := uint64(n.msix[i])
			if size == 8 && i+1 < uint32(len(n.msix)) {
				v |= uint64(n.msix[i+1]) << 32
			}
			return v
		}
	}
	return 0
}

// MMIOWrite implements sim.Device.
func (n *NIC) MMIOWrite(bar int, off uint32, size int, v uint64) {
	switch bar {
	case barMMIO:
		n.write32(off, uint32(v))
		if size == 8 {
			n.write32(off+4, uint32(v>>32))
		}
	case barIO:
		switch off {
		case ioAddr:
			n.mu.Lock()
			n.ioaddr = uint32(v) &^ 3 % mmioSize
			n.mu.Unlock()
		case ioData:
			n.mu.Lock()
			a := n.ioaddr
			n.mu.Unlock()
			n.write32(a, uint32(v))
		}
	case barMSIX:
		n.mu.Lock()
		defer n.mu.Unlock()
		for k := range size / 4 {
			if i := off/4 + uint32(k); i < uint32(len(n.msix)) {
				n.msix[i] = uint32(v >> (32 * k))
			}
		}
	}
}

// Plug builds a model and plugs it into machine m at a: its config space
// on the bus, its DMA through the machine's port (and so through the VT-d
// unit), its interrupt on the machine's line for a.
func Plug(m *sim.Machine, a pci.Addr, opt Options) (*NIC, error) {
	n, err := New(opt, m.Port(a), m.IRQ(a))
	if err != nil {
		return nil, err
	}
	if err := m.Bus.Add(a, n); err != nil {
		return nil, fmt.Errorf("m82576: plug at %v: %w", a, err)
	}
	return n, nil
}
