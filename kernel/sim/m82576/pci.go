package m82576

import (
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/nicmodel"
	"github.com/ether9/ether9/pci"
)

// PCI identity and BAR layout.
const (
	vendorID  = 0x8086
	deviceID  = 0x10c9
	subVendor = 0x8086
	subDevice = 0xa03c
	revision  = 0x01

	ClassEthernet = nicmodel.ClassEthernet

	barMMIO = 0 // 128 KiB registers
	barIO   = 2 // 32 B: IOADDR, IODATA
	barMSIX = 3 // 16 KiB: MSI-X table and PBA

	msixSize    = 16 << 10
	msixVectors = 10
	msixPBA     = 0x2000
)

func (n *NIC) initConfig() {
	c := sim.NewConfigSpace(vendorID, deviceID, ClassEthernet, 0)
	c.SetSubsystem(subVendor, subDevice)
	c.SetRevision(revision)
	c.SetBAR(barMMIO, pci.BARMem32, mmioSize, false)
	c.SetBAR(barIO, pci.BARIO, nicmodel.IOSize, false)
	c.SetBAR(barMSIX, pci.BARMem32, msixSize, false)
	nicmodel.AddPM(c)
	nicmodel.AddMSI(c, 0x0180, 20) // 64-bit address, per-vector masking, one vector
	n.msix = nicmodel.AddMSIX(c, msixVectors, barMSIX, msixPBA, n.irq)
	nicmodel.AddPCIe(c, nicmodel.PCIe{
		DevCap:     0x00008002, // max payload 512 B, role-based errors
		LinkCap:    0x00000c41, // 2.5 GT/s, x4, ASPM L0s and L1
		LinkStatus: 0x0041,     // link at 2.5 GT/s, x4
	})
	c.AddExtCap(nicmodel.ExtAER, 1, make([]byte, 0x2c))
	nicmodel.AddDSN(c, n.mac)
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
	return nicmodel.Plug(m, a, "m82576", func(dma nicmodel.DMA, irq nicmodel.Interrupt) (*NIC, error) {
		return New(opt, dma, irq)
	})
}
