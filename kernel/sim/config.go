package sim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"sync"

	"github.com/ether9/ether9/pci"
)

// Config space offsets and bits (PCI Local Bus 3.0, PCI Express 4.0).
const (
	cfgVendor     = 0x00
	cfgDevice     = 0x02
	cfgCommand    = 0x04
	cfgStatus     = 0x06
	cfgRevision   = 0x08
	cfgClass      = 0x09 // prog-if, subclass, base class
	cfgCacheLine  = 0x0C
	cfgLatency    = 0x0D
	cfgHeader     = 0x0E
	cfgBAR0       = 0x10
	cfgSubVendor  = 0x2C // type 0
	cfgSubDevice  = 0x2E
	cfgCapPtr     = 0x34
	cfgIntLine    = 0x3C
	cfgIntPin     = 0x3D
	cfgPrimary    = 0x18 // type 1
	cfgSecondary  = 0x19
	cfgSubord     = 0x1A
	cfgSecLatency = 0x1B
	cfgIOBase     = 0x1C
	cfgSecStatus  = 0x1E
	cfgMemBase    = 0x20
	cfgPrefBase   = 0x24
	cfgPrefUpper  = 0x28
	cfgIOUpper    = 0x30
	cfgBridgeCtl  = 0x3E

	CmdIO        = 1 << 0
	CmdMemory    = 1 << 1
	CmdBusMaster = 1 << 2
	cmdParity    = 1 << 6
	cmdSERR      = 1 << 8
	cmdIntxOff   = 1 << 10

	statusIntx    = 1 << 3 // Interrupt Status: the function asserts INTx
	statusCapList = 1 << 4
	statusW1C     = 0xF900 // parity, target/master aborts, SERR, parity error

	headerMulti = 0x80

	capStart    = 0x40
	extCapStart = 0x100
	ConfigSize  = 4096
)

type barInfo struct {
	kind     pci.BARKind
	size     uint64
	prefetch bool
	upper    bool // the upper half of a 64-bit BAR
}

// ConfigSpace is one function's 4 KiB configuration space with per-bit
// write masks, write-1-to-clear status bits, BARs that size the way
// hardware does, and the capability lists. Safe for concurrent use.
type ConfigSpace struct {
	mu      sync.Mutex
	b       [ConfigSize]byte
	wmask   [ConfigSize]byte
	w1c     [ConfigSize]byte
	bars    [6]barInfo
	nbars   int
	lastCap int
	nextCap int
	lastExt int
	nextExt int
	err     error
}

// NewConfigSpace returns the config space of a function of header type 0
// (endpoint) or 1 (PCI-to-PCI bridge).
func NewConfigSpace(vendor, device uint16, class uint32, header uint8) *ConfigSpace {
	c := &ConfigSpace{nextCap: capStart, nextExt: extCapStart, nbars: 6}
	c.put(cfgVendor, 2, uint32(vendor))
	c.put(cfgDevice, 2, uint32(device))
	c.put(cfgClass, 3, class&0xffffff)
	c.b[cfgHeader] = header
	c.mask(cfgCommand, 2, CmdIO|CmdMemory|CmdBusMaster|cmdParity|cmdSERR|cmdIntxOff)
	c.putW1C(cfgStatus, 2, statusW1C)
	c.mask(cfgCacheLine, 1, 0xff)
	c.mask(cfgLatency, 1, 0xff)
	c.mask(cfgIntLine, 1, 0xff)
	c.b[cfgIntPin] = 1 // INTA#
	switch header &^ headerMulti {
	case 0:
	case 1:
		c.nbars = 2
		c.mask(cfgPrimary, 4, 0xffffffff) // bus numbers and secondary latency
		c.mask(cfgIOBase, 2, 0xf0f0)
		c.putW1C(cfgSecStatus, 2, statusW1C)
		c.mask(cfgMemBase, 4, 0xfff0fff0)
		c.mask(cfgPrefBase, 4, 0xfff0fff0)
		c.put(cfgPrefBase, 4, 0x00010001) // 64-bit prefetchable window
		c.mask(cfgPrefUpper, 4, 0xffffffff)
		c.mask(cfgPrefUpper+4, 4, 0xffffffff)
		c.mask(cfgIOUpper, 4, 0xffffffff)
		c.mask(cfgBridgeCtl, 2, 0x0fff)
	default:
		c.fail(fmt.Errorf("header type %d not modelled", header))
	}
	return c
}

func (c *ConfigSpace) fail(err error) {
	if c.err == nil {
		c.err = fmt.Errorf("config space %04x:%04x: %w",
			binary.LittleEndian.Uint16(c.b[cfgVendor:]), binary.LittleEndian.Uint16(c.b[cfgDevice:]), err)
	}
}

// Err returns the first mistake made building this config space (a bad
// BAR, capabilities that do not fit); Bus.Add refuses such a function.
func (c *ConfigSpace) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *ConfigSpace) put(off, size int, v uint32) {
	for i := range size {
		c.b[off+i] = byte(v >> (8 * i))
	}
}

func (c *ConfigSpace) get(off, size int) uint32 {
	var v uint32
	for i := range size {
		v |= uint32(c.b[off+i]) << (8 * i)
	}
	return v
}

func (c *ConfigSpace) mask(off, size int, m uint32) {
	for i := range size {
		c.wmask[off+i] = byte(m >> (8 * i))
	}
}

func (c *ConfigSpace) putW1C(off, size int, m uint32) {
	for i := range size {
		c.w1c[off+i] = byte(m >> (8 * i))
	}
}

// SetBAR declares BAR i. A 64-bit BAR also takes slot i+1. size is a power
// of two (at least 16 bytes for memory, 4 for I/O); 0 leaves the BAR
// unimplemented, so it sizes to zero.
func (c *ConfigSpace) SetBAR(i int, kind pci.BARKind, size uint64, prefetch bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	slots := 1
	if kind == pci.BARMem64 {
		slots = 2
	}
	switch {
	case i < 0 || i+slots > c.nbars:
		c.fail(fmt.Errorf("BAR %d (%d slots) out of range", i, slots))
		return
	case size != 0 && bits.OnesCount64(size) != 1:
		c.fail(fmt.Errorf("BAR %d size %#x is not a power of two", i, size))
		return
	case kind == pci.BARIO && size > 1<<16, kind == pci.BARMem32 && size > 1<<31:
		c.fail(fmt.Errorf("BAR %d size %#x too large for its kind", i, size))
		return
	case kind == pci.BARIO && prefetch:
		c.fail(fmt.Errorf("BAR %d: I/O BARs are not prefetchable", i))
		return
	}
	off := cfgBAR0 + 4*i
	c.bars[i] = barInfo{kind: kind, size: size, prefetch: prefetch}
	if size == 0 || kind == pci.BARNone {
		c.bars[i] = barInfo{}
		c.put(off, 4, 0)
		c.mask(off, 4, 0)
		return
	}
	switch kind {
	case pci.BARIO:
		size = max(size, 4)
		c.put(off, 4, 1)
		c.mask(off, 4, uint32(^(size-1))&^3)
	case pci.BARMem32, pci.BARMem64:
		size = max(size, 16)
		var flags uint32
		if kind == pci.BARMem64 {
			flags |= 2 << 1
		}
		if prefetch {
			flags |= 1 << 3
		}
		sizeMask := ^(size - 1)
		c.put(off, 4, flags)
		c.mask(off, 4, uint32(sizeMask)&^0xf)
		if kind == pci.BARMem64 {
			c.bars[i+1] = barInfo{upper: true}
			c.put(off+4, 4, 0)
			c.mask(off+4, 4, uint32(sizeMask>>32))
		}
	default:
		c.fail(fmt.Errorf("BAR %d: unknown kind %d", i, kind))
		return
	}
	c.bars[i].size = size
}

// BAR returns BAR i's declaration and current address.
func (c *ConfigSpace) BAR(i int) (kind pci.BARKind, size, addr uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bar(i)
}

func (c *ConfigSpace) bar(i int) (kind pci.BARKind, size, addr uint64) {
	if i < 0 || i >= c.nbars || c.bars[i].upper || c.bars[i].size == 0 {
		return pci.BARNone, 0, 0
	}
	bi := c.bars[i]
	off := cfgBAR0 + 4*i
	switch bi.kind {
	case pci.BARIO:
		addr = uint64(c.get(off, 4) &^ 3)
	case pci.BARMem32:
		addr = uint64(c.get(off, 4) &^ 0xf)
	case pci.BARMem64:
		addr = uint64(c.get(off, 4)&^0xf) | uint64(c.get(off+4, 4))<<32
	}
	return bi.kind, bi.size, addr
}

// setBARAddr programs a BAR's address as firmware would.
func (c *ConfigSpace) setBARAddr(i int, addr uint64) {
	off := cfgBAR0 + 4*i
	flags := c.get(off, 4) & 0xf
	if c.bars[i].kind == pci.BARIO {
		flags &= 3
	}
	c.put(off, 4, uint32(addr)|flags)
	if c.bars[i].kind == pci.BARMem64 {
		c.put(off+4, 4, uint32(addr>>32))
	}
}

// AddCap appends a capability with the given id; body is what follows the
// id and next-pointer bytes. It returns the capability's offset, or 0 if
// it does not fit below 0x100.
func (c *ConfigSpace) AddCap(id uint8, body []byte) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	off := c.nextCap
	n := (2 + len(body) + 3) &^ 3
	if off+n > extCapStart {
		c.fail(fmt.Errorf("capability %#x (%d bytes) does not fit", id, n))
		return 0
	}
	c.b[off] = id
	c.b[off+1] = 0
	copy(c.b[off+2:], body)
	if c.lastCap == 0 {
		c.b[cfgCapPtr] = byte(off)
	} else {
		c.b[c.lastCap+1] = byte(off)
	}
	c.lastCap, c.nextCap = off, off+n
	c.b[cfgStatus] |= statusCapList
	return off
}

// AddExtCap appends a PCI Express extended capability (id, version);
// body follows the 4-byte header. It returns the offset, or 0 if it does
// not fit.
func (c *ConfigSpace) AddExtCap(id uint16, ver uint8, body []byte) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	off := c.nextExt
	n := (4 + len(body) + 3) &^ 3
	if off+n > ConfigSize {
		c.fail(fmt.Errorf("extended capability %#x (%d bytes) does not fit", id, n))
		return 0
	}
	c.put(off, 4, uint32(id)|uint32(ver&0xf)<<16)
	copy(c.b[off+4:], body)
	if c.lastExt != 0 {
		c.put(c.lastExt, 4, c.get(c.lastExt, 4)&0xfffff|uint32(off)<<20)
	}
	c.lastExt, c.nextExt = off, off+n
	return off
}

// SetWriteMask makes the bits of mask at off writable by software (for
// capability registers such as MSI-X or power-management control).
func (c *ConfigSpace) SetWriteMask(off int, mask []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if off < 0 || off+len(mask) > ConfigSize {
		c.fail(fmt.Errorf("write mask at %#x (%d bytes) out of range", off, len(mask)))
		return
	}
	copy(c.wmask[off:], mask)
}

// SetSubsystem sets the subsystem vendor and device ids (type 0 only).
func (c *ConfigSpace) SetSubsystem(vendor, device uint16) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.put(cfgSubVendor, 2, uint32(vendor))
	c.put(cfgSubDevice, 2, uint32(device))
}

// SetRevision sets the revision id.
func (c *ConfigSpace) SetRevision(r uint8) {
	c.mu.Lock()
	c.b[cfgRevision] = r
	c.mu.Unlock()
}

// SetBridge sets a bridge's primary, secondary and subordinate bus numbers.
func (c *ConfigSpace) SetBridge(primary, secondary, subordinate uint8) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.b[cfgHeader]&^headerMulti != 1 {
		c.fail(errors.New("bus numbers on a function that is not a bridge"))
		return
	}
	c.b[cfgPrimary], c.b[cfgSecondary], c.b[cfgSubord] = primary, secondary, subordinate
}

// SetMultiFunction sets the multi-function bit of the header type.
func (c *ConfigSpace) SetMultiFunction() {
	c.mu.Lock()
	c.b[cfgHeader] |= headerMulti
	c.mu.Unlock()
}

// Command returns the command register.
func (c *ConfigSpace) Command() uint16 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return uint16(c.get(cfgCommand, 2))
}

// setIntStatus sets or clears the status register's Interrupt Status bit,
// which follows the function's INTx level whatever Interrupt Disable says.
func (c *ConfigSpace) setIntStatus(on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if on {
		c.b[cfgStatus] |= statusIntx
	} else {
		c.b[cfgStatus] &^= statusIntx
	}
}

// BusMaster reports whether the function may master DMA.
func (c *ConfigSpace) BusMaster() bool { return c.Command()&CmdBusMaster != 0 }

// MemoryEnabled reports whether the function decodes its memory BARs.
func (c *ConfigSpace) MemoryEnabled() bool { return c.Command()&CmdMemory != 0 }

// IOEnabled reports whether the function decodes its I/O BARs.
func (c *ConfigSpace) IOEnabled() bool { return c.Command()&CmdIO != 0 }

// Read reads size (1, 2 or 4) bytes at off as software does.
func (c *ConfigSpace) Read(off, size int) (uint32, error) {
	if err := checkAccess(off, size); err != nil {
		return 0, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.get(off, size), nil
}

// Write writes size bytes at off as software does: read-only bits keep
// their value, write-1-to-clear bits clear where v has ones.
func (c *ConfigSpace) Write(off, size int, v uint32) error {
	if err := checkAccess(off, size); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range size {
		nv := byte(v >> (8 * i))
		o := off + i
		c.b[o] = c.b[o]&^c.wmask[o] | nv&c.wmask[o]
		c.b[o] &^= nv & c.w1c[o]
	}
	return nil
}

// Poke sets bytes directly, bypassing the write masks: how a model changes
// its own status bits or capability contents.
func (c *ConfigSpace) Poke(off, size int, v uint32) error {
	if err := checkAccess(off, size); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.put(off, size, v)
	return nil
}

func checkAccess(off, size int) error {
	if size != 1 && size != 2 && size != 4 {
		return fmt.Errorf("config access of %d bytes: size must be 1, 2 or 4", size)
	}
	if off < 0 || off+size > ConfigSize || off%size != 0 {
		return fmt.Errorf("config access of %d bytes at %#x: out of range or unaligned", size, off)
	}
	return nil
}
