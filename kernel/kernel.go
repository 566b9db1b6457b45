// Package kernel is the contract between drivers and the machine they run
// on. Three platforms implement it: the Linux-hosted PID 1 platform, the
// simulated machine used by tests, and (later) bare metal. Everything above
// this package must work the same way on all three.
package kernel

import (
	"errors"
	"time"
)

// Regs is a device register window: a PCI BAR or the VT-d unit. Every call
// is exactly one load or store of the stated width, performed in program
// order with respect to the other calls on the same window.
type Regs interface {
	Read32(off uint32) uint32
	Write32(off uint32, v uint32)
	Read64(off uint32) uint64
	Write64(off uint32, v uint64)
}

// PhysAddr is a CPU physical address.
type PhysAddr uint64

// DMAAddr is an address as a device sees it: an IOVA when translation is
// on, a physical address when it is off.
type DMAAddr uint64

// Direction says which way a streaming DMA mapping moves data.
type Direction uint8

const (
	ToDevice      Direction = 1 << iota // CPU fills, device reads (TX)
	FromDevice                          // device fills, CPU reads (RX)
	Bidirectional = ToDevice | FromDevice
)

func (d Direction) String() string {
	switch d {
	case ToDevice:
		return "to-device"
	case FromDevice:
		return "from-device"
	case Bidirectional:
		return "bidirectional"
	}
	return "invalid-direction"
}

// PageSize is the translation granule of the platform and of VT-d.
const PageSize = 4096

// Segment is a physically contiguous piece of a pinned buffer.
type Segment struct {
	Phys PhysAddr
	Len  int
}

// Region is pinned, physically contiguous memory owned by the platform.
type Region struct {
	Buf  []byte
	Phys PhysAddr
}

// Memory is the platform's physical memory as the CPU sees it.
type Memory interface {
	// Alloc returns zeroed, pinned, physically contiguous memory. align is
	// a power of two; PageSize or more gives page-aligned memory.
	Alloc(size, align int) (Region, error)
	// Free returns a region obtained from Alloc.
	Free(Region) error

	// Pin makes buf (any CPU buffer, for example a packet buffer from the
	// Go heap) addressable by devices and returns its physical segments in
	// order, split at page boundaries where physical pages are not
	// adjacent. Unpin undoes one Pin of the same slice.
	Pin(buf []byte) ([]Segment, error)
	Unpin(buf []byte) error

	// SyncForCPU makes device writes to [p, p+n) visible to the CPU;
	// SyncForDevice makes CPU writes visible to the device. Both are no-ops
	// on cache-coherent platforms.
	SyncForCPU(p PhysAddr, n int)
	SyncForDevice(p PhysAddr, n int)

	// FlushCache writes buf back from the CPU caches so that a device which
	// does not snoop (VT-d with ECAP.C=0 walking its tables) sees it.
	FlushCache(buf []byte)
}

// CoherentDMA is an optional interface of a Memory that knows whether
// streaming DMA is coherent with the CPU's caches. While DMACoherent
// reports true, SyncForCPU and SyncForDevice would do nothing, and the DMA
// layer may skip them (it still checks each sync against its mapping). The
// answer may change over a Memory's life, so it is asked at each sync.
type CoherentDMA interface {
	DMACoherent() bool
}

// Coherent is a DMA allocation that stays mapped for the device's life and
// needs no syncs: descriptor rings.
type Coherent struct {
	Buf  []byte
	Addr DMAAddr
}

// DMA is one device's view of memory, provided by the IOMMU layer (with
// translation on or off). Streaming mappings follow the Linux DMA API rules:
// the CPU may touch a FromDevice buffer only between SyncForCPU and
// SyncForDevice (or after Unmap).
type DMA interface {
	AllocCoherent(size int) (Coherent, error)
	FreeCoherent(Coherent) error

	Map(buf []byte, dir Direction) (DMAAddr, error)
	Unmap(addr DMAAddr, size int, dir Direction) error
	SyncForCPU(addr DMAAddr, size int, dir Direction) error
	SyncForDevice(addr DMAAddr, size int, dir Direction) error
}

// Clock is monotonic time. The simulated machine may run it faster than the
// wall clock so that reset and link delays do not slow tests down.
type Clock interface {
	Now() time.Duration
	Sleep(d time.Duration)
}

// Waiter is how a poll loop waits for work. Wait returns true when the
// device signalled (an interrupt, or a kick) and false when timeout passed.
// Platforms without interrupts simply sleep: polling with back-off.
type Waiter interface {
	Wait(timeout time.Duration) bool
}

// MSI is an interrupt a device raises by writing a message: data to an
// address of the local APIC, or, through interrupt remapping, the
// message of a remapping entry that delivers it. The platform hands it
// out; the device is programmed with the message, and a loop waits on it.
type MSI interface {
	Waiter
	MSIAddress() uint64
	MSIData() uint16
	Vector() uint8 // the processor's vector it arrives on
	Close() error
}

// Errors shared by all platforms; wrap them with context.
var (
	ErrNoMemory    = errors.New("out of memory")
	ErrBadAddress  = errors.New("bad address")
	ErrNotMapped   = errors.New("not mapped")
	ErrUnaligned   = errors.New("unaligned")
	ErrZeroLength  = errors.New("zero length")
	ErrNoIOVASpace = errors.New("iova space exhausted")
)
