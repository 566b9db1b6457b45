package pci

import (
	"fmt"
	"sync"
)

// PortIO is x86 port I/O: each call is exactly one IN or OUT instruction of
// its width. The host implementation needs I/O privilege (iopl); tests
// substitute a model of the host bridge.
type PortIO interface {
	In8(port uint16) uint8
	In16(port uint16) uint16
	In32(port uint16) uint32
	Out8(port uint16, v uint8)
	Out16(port uint16, v uint16)
	Out32(port uint16, v uint32)
}

// Configuration mechanism #1 (PCI Local Bus Specification 3.0, 3.2.2.3.2).
const (
	PortConfigAddress = 0xcf8 // CONFIG_ADDRESS, 32-bit accesses only: 0xcf9 is the reset control register
	PortConfigData    = 0xcfc // CONFIG_DATA, 0xcfc-0xcff

	configEnable = 1 << 31
)

// ConfigAddress is the CONFIG_ADDRESS value that selects the dword holding
// off: enable bit, bus in 23:16, device in 15:11, function in 10:8,
// register in 7:2. Only segment 0 and the first 256 bytes are reachable.
func ConfigAddress(a Addr, off int) uint32 {
	return configEnable | uint32(a.Bus)<<16 | uint32(a.Dev&0x1f)<<11 | uint32(a.Fn&0x7)<<8 | uint32(off)&0xfc
}

// Ports reaches configuration space through the legacy ports. The address
// and data ports are one shared pair, so every access holds the lock from
// the address write to the data access.
type Ports struct {
	mu sync.Mutex
	io PortIO
}

// NewPorts returns a Config over io.
func NewPorts(io PortIO) *Ports { return &Ports{io: io} }

func (p *Ports) check(a Addr, off, size int) error {
	if a.Seg != 0 {
		return fmt.Errorf("pci %v: %w: the legacy ports reach segment 0 only", a, ErrOutOfRange)
	}
	return checkAccess(a, off, size, ConfigSize)
}

// ReadConfig reads size bytes at off. The data port is read at the byte
// lane of off, so a 1- or 2-byte read is one access of that width.
func (p *Ports) ReadConfig(a Addr, off, size int) (uint32, error) {
	if err := p.check(a, off, size); err != nil {
		return 0, err
	}
	port := uint16(PortConfigData + off&3)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.io.Out32(PortConfigAddress, ConfigAddress(a, off))
	switch size {
	case 1:
		return uint32(p.io.In8(port)), nil
	case 2:
		return uint32(p.io.In16(port)), nil
	default:
		return p.io.In32(port), nil
	}
}

// WriteConfig writes the low size bytes of v at off with one access of
// that width, so neighbouring registers (write-one-to-clear status bits
// next to COMMAND) are not touched.
func (p *Ports) WriteConfig(a Addr, off, size int, v uint32) error {
	if err := p.check(a, off, size); err != nil {
		return err
	}
	if v > sizeMask(size) {
		return fmt.Errorf("pci %v: %w: value %#x does not fit %d bytes", a, ErrBadAccess, v, size)
	}
	port := uint16(PortConfigData + off&3)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.io.Out32(PortConfigAddress, ConfigAddress(a, off))
	switch size {
	case 1:
		p.io.Out8(port, uint8(v))
	case 2:
		p.io.Out16(port, uint16(v))
	default:
		p.io.Out32(port, v)
	}
	return nil
}
