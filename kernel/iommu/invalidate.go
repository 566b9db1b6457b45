package iommu

import (
	"fmt"
	"math/bits"
	"strings"

	"github.com/ether9/ether9/kernel"
)

// Mode is the IOTLB invalidation policy for unmaps.
type Mode uint8

const (
	// Strict invalidates the IOTLB on every unmap, before the IOVA can be
	// handed out again: a device never reaches memory it was unmapped from.
	Strict Mode = iota
	// Deferred collects unmaps and invalidates once per batch; their IOVAs
	// (and buffers, for the unit) stay reserved until that invalidation has
	// completed, so no stale translation ever points at a reused IOVA.
	Deferred
)

func (m Mode) String() string {
	switch m {
	case Strict:
		return "strict"
	case Deferred:
		return "deferred"
	}
	return fmt.Sprintf("mode(%d)", uint8(m))
}

// ParseMode parses "strict" or "deferred", as written to a ctl file.
func ParseMode(s string) (Mode, error) {
	switch strings.TrimSpace(s) {
	case "strict":
		return Strict, nil
	case "deferred", "lazy":
		return Deferred, nil
	}
	return 0, fmt.Errorf("iommu: mode %q: want strict or deferred", s)
}

// invKind is an IOTLB invalidation granularity (IIRG/IAIG encoding).
type invKind uint8

const (
	invGlobal invKind = 1
	invDomain invKind = 2
	invPage   invKind = 3
)

func (k invKind) String() string {
	switch k {
	case invGlobal:
		return "global"
	case invDomain:
		return "domain"
	case invPage:
		return "page"
	}
	return "none"
}

// retired is an unmapped range waiting for the IOTLB invalidation that lets
// its IOVA, and the memory behind it, be reused.
type retired struct {
	d      *Domain
	iova   uint64
	size   uint64
	buf    []byte         // pinned buffer to unpin
	region *kernel.Region // coherent allocation to free
}

// invalidator issues register-based context-cache and IOTLB invalidations
// and implements the strict and deferred unmap policies. It runs under the
// unit's lock.
type invalidator struct {
	u       *Unit
	mode    Mode
	batch   int
	pending []retired
	// skip drops IOTLB invalidations after unmaps. Tests set it to prove
	// that the hardware model really serves stale translations.
	skip bool
}

// SetMode selects strict or deferred invalidation. batch is the number of
// unmaps per invalidation in deferred mode (0: DefaultBatch). Leaving
// deferred mode completes the pending batch first.
func (u *Unit) SetMode(m Mode, batch int) error {
	if m != Strict && m != Deferred {
		return fmt.Errorf("iommu: set mode: %v unknown", m)
	}
	if batch < 0 {
		return fmt.Errorf("iommu: set mode: batch %d is negative", batch)
	}
	if batch == 0 {
		batch = DefaultBatch
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if m == Strict {
		if err := u.inv.flush(); err != nil {
			return fmt.Errorf("iommu: set mode strict: %w", err)
		}
	}
	u.inv.mode, u.inv.batch = m, batch
	return nil
}

// Mode returns the invalidation mode and the deferred batch size.
func (u *Unit) Mode() (Mode, int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.inv.mode, u.inv.batch
}

// Flush completes every deferred unmap: one IOTLB invalidation, then the
// IOVAs and buffers are released.
func (u *Unit) Flush() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.inv.flush()
}

// retire finishes an unmap whose leaves are already cleared.
func (iv *invalidator) retire(r retired) error {
	if iv.mode == Strict || !iv.u.enabled {
		if iv.u.enabled && !iv.skip {
			if err := iv.rangeInvalidate(r.d, r.iova, r.size); err != nil {
				// The IOVA may still be cached: keep it reserved forever
				// rather than hand it to another buffer.
				return err
			}
		}
		return iv.release(r)
	}
	iv.pending = append(iv.pending, r)
	if len(iv.pending) >= iv.batch {
		return iv.flush()
	}
	return nil
}

// rangeInvalidate drops the translations of [iova, iova+size) in domain d:
// page-selective when the unit has PSI and the range fits one address mask,
// else domain-selective.
func (iv *invalidator) rangeInvalidate(d *Domain, iova, size uint64) error {
	c := iv.u.caps
	first, last := iova>>pageShift, (iova+size-1)>>pageShift
	am := uint(bits.Len64(first ^ last)) // smallest aligned 2^am pages holding the range
	if c.PSI && am <= c.MAMV {
		base := (first &^ (1<<am - 1)) << pageShift
		return iv.iotlb(invPage, d.id, base, am)
	}
	return iv.iotlb(invDomain, d.id, 0, 0)
}

// flush invalidates once for every pending unmap and releases them.
func (iv *invalidator) flush() error {
	if len(iv.pending) == 0 {
		return nil
	}
	if iv.u.enabled && !iv.skip {
		d := iv.pending[0].d
		one := true
		for _, r := range iv.pending[1:] {
			if r.d != d {
				one = false
				break
			}
		}
		var err error
		if one {
			err = iv.iotlb(invDomain, d.id, 0, 0)
		} else {
			err = iv.iotlb(invGlobal, 0, 0, 0)
		}
		if err != nil {
			return fmt.Errorf("iommu: deferred flush of %d unmaps: %w", len(iv.pending), err)
		}
	}
	var firstErr error
	for _, r := range iv.pending {
		if err := iv.release(r); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	iv.pending = iv.pending[:0]
	return firstErr
}

// release hands an invalidated range back: IOVA to the allocator, buffer
// to the platform.
func (iv *invalidator) release(r retired) error {
	err := r.d.iova.release(r.iova, r.size)
	mem := iv.u.tm.mem
	switch {
	case r.region != nil:
		if ferr := mem.Free(*r.region); ferr != nil && err == nil {
			err = fmt.Errorf("free coherent %#x: %w", r.region.Phys, ferr)
		}
	case r.buf != nil:
		if uerr := mem.Unpin(r.buf); uerr != nil && err == nil {
			err = fmt.Errorf("unpin: %w", uerr)
		}
	}
	if err != nil {
		return fmt.Errorf("iommu: release iova %#x: %w", r.iova, err)
	}
	return nil
}

// iotlb issues one IOTLB invalidation, through the queue when it is on,
// else through the registers, and waits for it.
func (iv *invalidator) iotlb(k invKind, did uint16, addr uint64, am uint) error {
	u := iv.u
	if err := u.writeBufferFlush(); err != nil {
		return err
	}
	if u.qi != nil {
		if err := u.qi.iotlb(k, did, addr, am); err != nil {
			return err
		}
		u.stats.count(k)
		return nil
	}
	cmd := uint64(iotlbIVT) | uint64(k)<<iotlbIIRGShift
	if k != invGlobal {
		cmd |= uint64(did) << iotlbDIDShift
	}
	if u.caps.DRD {
		cmd |= iotlbDR
	}
	if u.caps.DWD {
		cmd |= iotlbDW
	}
	if k == invPage {
		u.regs.Write64(u.caps.IRO, addr|uint64(am))
	}
	reg := u.caps.IRO + 8
	u.regs.Write64(reg, cmd)
	var v uint64
	if err := u.wait("IOTLB "+k.String()+" invalidation", func() bool {
		v = u.regs.Read64(reg)
		return v&iotlbIVT == 0
	}); err != nil {
		return err
	}
	if v>>iotlbIAIGShift&iotlbGranMask == 0 {
		u.stats.RefusedInvalidations++
		if k == invGlobal {
			return fmt.Errorf("iommu: IOTLB global invalidation refused (IOTLB reg %#x)", v)
		}
		// The unit would not do this granularity: fall back to global.
		return iv.iotlb(invGlobal, 0, 0, 0)
	}
	u.stats.count(k)
	return nil
}

// contextGlobal invalidates the whole context cache.
func (iv *invalidator) contextGlobal() error {
	u := iv.u
	if err := u.writeBufferFlush(); err != nil {
		return err
	}
	if u.qi != nil {
		if err := u.qi.contextGlobal(); err != nil {
			return err
		}
		u.stats.ContextInvalidations++
		return nil
	}
	u.regs.Write64(regCCMD, ccmdICC|ccmdGlobal)
	var v uint64
	if err := u.wait("context-cache invalidation", func() bool {
		v = u.regs.Read64(regCCMD)
		return v&ccmdICC == 0
	}); err != nil {
		return err
	}
	u.stats.ContextInvalidations++
	if v>>ccmdCAIGShift&ccmdGranMask == 0 {
		return fmt.Errorf("iommu: context-cache invalidation refused (CCMD %#x)", v)
	}
	return nil
}

// newContext makes a context entry written while translation is on take
// effect. Without caching mode a not-present entry is never cached, so
// nothing is needed; with it, the entry may be cached as not present.
func (iv *invalidator) newContext() error {
	if !iv.u.caps.CM {
		return iv.u.writeBufferFlush()
	}
	if err := iv.contextGlobal(); err != nil {
		return err
	}
	return iv.iotlb(invGlobal, 0, 0, 0)
}

// newMapping makes leaves that were not present take effect: only caching
// mode hardware may have cached them.
func (iv *invalidator) newMapping(d *Domain, iova, size uint64) error {
	if !iv.u.caps.CM || !iv.u.enabled {
		return iv.u.writeBufferFlush()
	}
	return iv.rangeInvalidate(d, iova, size)
}

// writeBufferFlush drains the unit's write buffer when CAP.RWBF says table
// updates may otherwise sit in it.
func (u *Unit) writeBufferFlush() error {
	if !u.caps.RWBF {
		return nil
	}
	return u.gcmd("write buffer flush", gcmdWBF, 0, func(s uint32) bool { return s&gstsWBFS == 0 })
}
