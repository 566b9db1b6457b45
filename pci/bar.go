package pci

import (
	"errors"
	"fmt"
)

func (k BARKind) String() string {
	switch k {
	case BARNone:
		return "none"
	case BARMem32:
		return "mem32"
	case BARMem64:
		return "mem64"
	case BARIO:
		return "io"
	}
	return fmt.Sprintf("barkind(%d)", uint8(k))
}

// IsMem reports whether the BAR decodes memory space.
func (b BAR) IsMem() bool { return b.Kind == BARMem32 || b.Kind == BARMem64 }

// Mappable reports whether the BAR is a memory BAR with a size: a window
// a driver can map.
func (b BAR) Mappable() bool { return b.IsMem() && b.Size != 0 }

// barCount is how many BAR slots a header type has.
func barCount(header uint8) int {
	switch header {
	case HeaderNormal:
		return 6
	case HeaderBridge:
		return 2
	case HeaderCardBus:
		return 1 // the socket/ExCA register base
	}
	return 0
}

// ReadBARs decodes the BARs of the function at a. With size set, each BAR
// is also sized: its value saved, all ones written, the read-back mask
// taken and the value restored, with memory and I/O decoding turned off in
// COMMAND meanwhile (so the device never decodes the all-ones address) and
// COMMAND restored afterwards. A BAR that sizes to zero is absent
// (BARNone). Without sizing, a BAR register reading zero is reported
// absent, as nothing can tell an unassigned BAR from an unimplemented one
// without writing it; sizing writes config space, so use it only on
// functions no other driver is using.
//
// A malformed BAR (a 64-bit BAR in the last slot, the reserved memory
// type) is an error naming it; the other BARs are still returned.
func ReadBARs(c Config, a Addr, size bool) (bars [6]BAR, err error) {
	for i := range bars {
		bars[i].Index = i
	}
	ht, err := read8(c, a, RegHeaderType)
	if err != nil {
		return bars, fmt.Errorf("pci %v: header type: %w", a, err)
	}
	n := barCount(ht & HeaderTypeMask)
	if n == 0 {
		return bars, fmt.Errorf("pci %v: unknown header type %#x", a, ht&HeaderTypeMask)
	}
	var errs []error
	defer func() { err = errors.Join(append([]error{err}, errs...)...) }()
	if size {
		cmd, err := read16(c, a, RegCommand)
		if err != nil {
			return bars, fmt.Errorf("pci %v: command: %w", a, err)
		}
		if cmd&(CmdIO|CmdMemory) != 0 {
			if err := c.WriteConfig(a, RegCommand, 2, uint32(cmd&^(CmdIO|CmdMemory))); err != nil {
				return bars, fmt.Errorf("pci %v: turning decoding off to size BARs: %w", a, err)
			}
			defer func() {
				if err := c.WriteConfig(a, RegCommand, 2, uint32(cmd)); err != nil {
					errs = append(errs, fmt.Errorf("pci %v: restoring command %#x after sizing: %w", a, cmd, err))
				}
			}()
		}
	}
	for i := 0; i < n; i++ {
		b, used, err := readBAR(c, a, i, n, size)
		if err != nil {
			errs = append(errs, err)
		}
		bars[i] = b
		i += used - 1
	}
	return bars, nil // the deferred join reports errs
}

// sizeBAR writes all ones to the BAR register at off, reads the mask back
// and restores the original value v.
func sizeBAR(c Config, a Addr, off int, v uint32) (uint32, error) {
	if err := c.WriteConfig(a, off, 4, 0xffffffff); err != nil {
		return 0, err
	}
	m, rerr := read32(c, a, off)
	if err := c.WriteConfig(a, off, 4, v); err != nil {
		return 0, fmt.Errorf("restoring %#x: %w", v, err)
	}
	return m, rerr
}

// readBAR decodes (and sizes) BAR i of n and returns how many slots it
// uses: 2 for a 64-bit BAR, else 1.
func readBAR(c Config, a Addr, i, n int, size bool) (BAR, int, error) {
	bar := BAR{Index: i}
	off := RegBAR0 + 4*i
	lo, err := read32(c, a, off)
	if err != nil {
		return bar, 1, fmt.Errorf("pci %v bar%d: %w", a, i, err)
	}
	if lo == 0xffffffff {
		return bar, 1, fmt.Errorf("pci %v bar%d: reads all ones: %w", a, i, ErrAbsent)
	}

	if lo&barIOSpace != 0 {
		bar.Kind = BARIO
		bar.Addr = uint64(lo & barIOAddrMask)
		if !size {
			return bar, 1, nil
		}
		m, err := sizeBAR(c, a, off, lo)
		if err != nil {
			return BAR{Index: i}, 1, fmt.Errorf("pci %v bar%d: sizing: %w", a, i, err)
		}
		if m&barIOSpace == 0 {
			return BAR{Index: i}, 1, fmt.Errorf("pci %v bar%d: type changed from i/o to memory while sizing (%#x)", a, i, m)
		}
		// A 16-bit I/O decoder reads zeros above bit 15; the lowest
		// writable bit is the size either way.
		mask := uint64(m & barIOAddrMask)
		bar.Size = mask & -mask
		if bar.Size == 0 {
			return BAR{Index: i}, 1, nil
		}
		return bar, 1, nil
	}

	bar.Prefetchable = lo&barPrefetch != 0
	bar.Addr = uint64(lo & barMemAddrMask)
	used := 1
	var hi uint32
	switch lo & barMemType {
	case barMemType32, barMemType1M:
		bar.Kind = BARMem32
	case barMemType64:
		bar.Kind = BARMem64
		used = 2
		if i+1 >= n {
			return BAR{Index: i}, 1, fmt.Errorf("pci %v bar%d: 64-bit BAR in the last slot", a, i)
		}
		if hi, err = read32(c, a, off+4); err != nil {
			return BAR{Index: i}, 2, fmt.Errorf("pci %v bar%d: upper half: %w", a, i, err)
		}
		bar.Addr |= uint64(hi) << 32
	default:
		return BAR{Index: i}, 1, fmt.Errorf("pci %v bar%d: reserved memory type in %#x", a, i, lo)
	}
	if !size {
		if bar.Kind == BARMem32 && lo == 0 {
			return BAR{Index: i}, 1, nil
		}
		return bar, used, nil
	}

	m, err := sizeBAR(c, a, off, lo)
	if err != nil {
		return BAR{Index: i}, used, fmt.Errorf("pci %v bar%d: sizing: %w", a, i, err)
	}
	if m&(barIOSpace|barMemType) != lo&(barIOSpace|barMemType) {
		return BAR{Index: i}, used, fmt.Errorf("pci %v bar%d: type bits changed while sizing (%#x, was %#x)", a, i, m, lo)
	}
	mask := uint64(m & barMemAddrMask)
	if bar.Kind == BARMem64 {
		mhi, err := sizeBAR(c, a, off+4, hi)
		if err != nil {
			return BAR{Index: i}, used, fmt.Errorf("pci %v bar%d: sizing upper half: %w", a, i, err)
		}
		mask |= uint64(mhi) << 32
	}
	bar.Size = mask & -mask
	if bar.Size == 0 {
		return BAR{Index: i}, used, nil
	}
	return bar, used, nil
}
