package usbfw

import (
	"sync"

	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/pci"
)

// UHCI's LEGSUP, 16 bits at 0xC0 of configuration space, as Intel's ICH
// datasheets give it: bits 13, 7, 5 and 4:0 read/write (the PCI
// interrupt, the SMI at end of pass-through, A20 pass-through, the SMI
// on USB interrupt and the port 64h/60h write and read traps), 15 and
// 11:8 write-1-to-clear (the SMIs those caused), 14, 12 and 6 read-only.
// There is no semaphore: firmware holds the controller by its enables.
const (
	UHCILEGSUP = 0xc0

	uhciLegRW  = 1<<13 | 1<<7 | 1<<5 | 0x1f
	uhciLegRWC = 1<<15 | 0xf<<8

	// UHCIFirmwareLEGSUP is what firmware that emulates a keyboard
	// leaves: the PCI interrupt, the SMI on USB interrupt, A20
	// pass-through and the four traps on, one port 60h read trapped.
	UHCIFirmwareLEGSUP = 1<<13 | 1<<5 | 0x1f | 1<<8

	uhciIOSize = 0x20
)

// UHCI is a UHCI function (an Intel ICH one, class 0x0c0300) with its
// legacy support register as firmware left it.
type UHCI struct {
	cfg    *sim.ConfigSpace
	mu     sync.Mutex
	legsup uint16
}

// NewUHCI returns a controller whose LEGSUP holds legsup.
func NewUHCI(legsup uint16) *UHCI {
	c := &UHCI{cfg: sim.NewConfigSpace(0x8086, 0x3a34, 0x0c0300, 0), legsup: legsup}
	c.cfg.SetBAR(4, pci.BARIO, uhciIOSize, false)
	_ = c.cfg.Poke(UHCILEGSUP, 2, uint32(legsup))
	return c
}

func (c *UHCI) Config() *sim.ConfigSpace { return c.cfg }

// LEGSUP is the register as it stands.
func (c *UHCI) LEGSUP() uint16 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.legsup
}

// ConfigWritten applies a write of either byte or both: the read/write
// bits take what is written, the write-1-to-clear ones clear where it
// has ones.
func (c *UHCI) ConfigWritten(off, size int, v uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	val, bytes := written(off, size, v, UHCILEGSUP, 2)
	if bytes == 0 {
		return
	}
	c.legsup = uint16(apply(uint32(c.legsup), val, bytes, uhciLegRW, uhciLegRWC))
	_ = c.cfg.Poke(UHCILEGSUP, 2, uint32(c.legsup))
}

func (c *UHCI) MMIORead(bar int, off uint32, size int) uint64     { return 0 }
func (c *UHCI) MMIOWrite(bar int, off uint32, size int, v uint64) {}
