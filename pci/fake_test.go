package pci

import (
	"encoding/binary"
	"sync"
)

// fakeBus is a configuration space model for unit tests: per-function
// bytes with write masks and write-one-to-clear bits, so BARs size the way
// hardware does (address bits above the size writable, type bits fixed).
// It records the COMMAND value in force whenever a BAR is written.
type fakeBus struct {
	mu    sync.Mutex
	fns   map[Addr]*fakeFn
	limit int // bytes of config space reachable per function
}

type fakeFn struct {
	cfg, wmask, w1c [ExtConfigSize]byte
	cmdAtBARWrite   []uint16
	writes          int
	lastCap         int // offset of the last standard capability, 0 if none
	nextCap         int // where the next capability goes
	lastExt         int
}

func newFakeBus() *fakeBus {
	return &fakeBus{fns: make(map[Addr]*fakeFn), limit: ExtConfigSize}
}

func (b *fakeBus) add(a Addr, f *fakeFn) *fakeFn {
	b.fns[a] = f
	return f
}

func newFakeFn(vendor, device uint16, class uint32, header uint8) *fakeFn {
	f := &fakeFn{nextCap: 0x40}
	f.put(RegVendorID, 2, uint32(vendor))
	f.put(RegDeviceID, 2, uint32(device))
	f.put(RegRevisionID, 4, class<<8|0x01)
	f.cfg[RegHeaderType] = header
	f.mask(RegCommand, 2, CmdIO|CmdMemory|CmdBusMaster|CmdParity|CmdSERR|CmdINTxDisable)
	f.put(RegStatus, 2, 0)
	binary.LittleEndian.PutUint16(f.w1c[RegStatus:], 0xf900)
	if header&HeaderTypeMask == HeaderBridge {
		f.mask(RegPrimaryBus, 4, 0x00ffffff)
	}
	return f
}

func (f *fakeFn) put(off, size int, v uint32) {
	for i := 0; i < size; i++ {
		f.cfg[off+i] = byte(v >> (8 * i))
	}
}

func (f *fakeFn) get(off, size int) uint32 {
	var v uint32
	for i := 0; i < size; i++ {
		v |= uint32(f.cfg[off+i]) << (8 * i)
	}
	return v
}

func (f *fakeFn) mask(off, size int, m uint32) {
	for i := 0; i < size; i++ {
		f.wmask[off+i] = byte(m >> (8 * i))
	}
}

// bar implements BAR i: kind, power-of-two size, assigned address.
func (f *fakeFn) bar(i int, kind BARKind, size, addr uint64, prefetch bool) *fakeFn {
	off := RegBAR0 + 4*i
	switch kind {
	case BARIO:
		f.put(off, 4, uint32(addr)|barIOSpace)
		f.mask(off, 4, uint32(^(size-1))&barIOAddrMask)
	case BARMem32, BARMem64:
		low := uint32(0)
		if kind == BARMem64 {
			low = barMemType64
		}
		if prefetch {
			low |= barPrefetch
		}
		f.put(off, 4, uint32(addr)|low)
		f.mask(off, 4, uint32(^(size-1))&barMemAddrMask)
		if kind == BARMem64 {
			f.put(off+4, 4, uint32(addr>>32))
			f.mask(off+4, 4, uint32(^(size-1)>>32))
		}
	}
	return f
}

// cap appends a standard capability with body after its 2-byte header.
func (f *fakeFn) cap(id uint8, body []byte) int {
	off := f.nextCap
	f.cfg[off] = id
	copy(f.cfg[off+2:], body)
	if f.lastCap == 0 {
		f.cfg[RegCapPtr] = byte(off)
		f.cfg[RegStatus] |= StatusCapList
	} else {
		f.cfg[f.lastCap+1] = byte(off)
	}
	f.lastCap = off
	f.nextCap = (off + 2 + len(body) + 3) &^ 3
	return off
}

// extCap appends an extended capability at off.
func (f *fakeFn) extCap(off int, id uint16, ver uint8) {
	f.put(off, 4, uint32(id)|uint32(ver&0xf)<<16)
	if f.lastExt != 0 {
		h := f.get(f.lastExt, 4)
		f.put(f.lastExt, 4, h&0xfffff|uint32(off)<<20)
	}
	f.lastExt = off
}

func (b *fakeBus) ReadConfig(a Addr, off, size int) (uint32, error) {
	if err := checkAccess(a, off, size, b.limit); err != nil {
		return 0, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	f, ok := b.fns[a]
	if !ok {
		return sizeMask(size), nil
	}
	return f.get(off, size), nil
}

func (b *fakeBus) WriteConfig(a Addr, off, size int, v uint32) error {
	if err := checkAccess(a, off, size, b.limit); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	f, ok := b.fns[a]
	if !ok {
		return nil // master abort: the write goes nowhere
	}
	f.writes++
	if off >= RegBAR0 && off < RegBAR0+24 {
		f.cmdAtBARWrite = append(f.cmdAtBARWrite, uint16(f.get(RegCommand, 2)))
	}
	for i := 0; i < size; i++ {
		nb := byte(v >> (8 * i))
		o := off + i
		f.cfg[o] = f.cfg[o]&^f.wmask[o] | nb&f.wmask[o]
		f.cfg[o] &^= nb & f.w1c[o]
	}
	return nil
}
