package m82574

import (
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/nicmodel"
	"github.com/ether9/ether9/pci"
)

// PCI identity and BAR layout.
const (
	ClassEthernet = nicmodel.ClassEthernet

	barMMIO = 0 // 128 KiB registers
	barIO   = 2 // 32 B: IOADDR, IODATA
	barMSIX = 3 // 16 KiB: MSI-X table and PBA

	msixSize    = 16 << 10
	msixVectors = 5
	msixPBA     = 0x2000
)

func (n *NIC) initConfig() {
	pers := &n.pers
	c := sim.NewConfigSpace(pers.Vendor, pers.Device, ClassEthernet, 0)
	c.SetSubsystem(pers.SubVendor, pers.SubDevice)
	c.SetRevision(pers.Revision)
	c.SetBAR(barMMIO, pci.BARMem32, mmioSize, false)
	nicmodel.AddPM(c)
	nicmodel.AddMSI(c, 0x0080, 12) // 64-bit address, one vector
	if pers.Standalone {
		c.SetBAR(barIO, pci.BARIO, nicmodel.IOSize, false)
		c.SetBAR(barMSIX, pci.BARMem32, msixSize, false)
		nicmodel.AddPCIe(c, nicmodel.PCIe{
			DevCap:     0x00008001, // max payload 256 B, role-based errors
			LinkCap:    0x00000c11, // 2.5 GT/s, x1, ASPM L0s and L1
			LinkStatus: 0x0011,     // link at 2.5 GT/s, x1
		})
		n.msix = nicmodel.AddMSIX(c, msixVectors, barMSIX, msixPBA, n.irq)
		c.AddExtCap(nicmodel.ExtAER, 1, make([]byte, 0x2c))
		nicmodel.AddDSN(c, n.mac)
	} else {
		c.AddCap(nicmodel.CapAF, []byte{0x06, 0x03, 0, 0}) // transactions pending, FLR
	}
	n.cfg = c
}

// ConfigWritten implements sim.ConfigWatcher: unmasking the MSI-X
// function sends its pending messages.
func (n *NIC) ConfigWritten(off, size int, v uint32) { n.msix.ConfigWritten() }

// Config implements sim.Device.
func (n *NIC) Config() *sim.ConfigSpace { return n.cfg }

// MMIORead implements sim.Device.
func (n *NIC) MMIORead(bar int, off uint32, size int) uint64 { return n.bars.Read(bar, off, size) }

// MMIOWrite implements sim.Device.
func (n *NIC) MMIOWrite(bar int, off uint32, size int, v uint64) { n.bars.Write(bar, off, size, v) }

// Plug builds a model and plugs it into machine m at a: its config space
// on the bus, its DMA through the machine's port (and so through the VT-d
// unit), its interrupt on the machine's line for a.
func Plug(m *sim.Machine, a pci.Addr, opt Options) (*NIC, error) {
	return nicmodel.Plug(m, a, "m82574", func(dma nicmodel.DMA, irq nicmodel.Interrupt) (*NIC, error) {
		return New(opt, dma, irq)
	})
}
