package vtd

import (
	"encoding/binary"

	"github.com/ether9/ether9/kernel"
)

// context is a fetched (and possibly cached) legacy-mode context entry.
// Under caching mode a not-present root or context entry is cached too,
// as its fault reason.
type context struct {
	lo, hi uint64
	absent Reason
}

func (c context) did() uint16   { return uint16(c.hi >> ctxDIDShift) }
func (c context) tt() uint64    { return c.lo >> ctxTTShift & ctxTTMask }
func (c context) aw() uint64    { return c.hi & ctxAWMask }
func (c context) fpd() bool     { return c.lo&ctxFPD != 0 }
func (c context) table() uint64 { return c.lo & addrMask }

// levels returns the table depth for the context's address width field.
func (c context) levels() int { return int(c.aw()) + 2 }

type tlbKey struct {
	did   uint16
	level uint8  // 1: 4 KiB, 2: 2 MiB, 3: 1 GiB
	pfn   uint64 // input address >> the level's page shift
}

type tlbEntry struct {
	phys uint64 // output page base
	perm uint64 // effective slR | slW
}

// tlbMax bounds the IOTLB. Eviction only ever drops translations, so it
// can hide a stale entry but never invent one.
const tlbMax = 1 << 16

func levelShift(level int) uint { return 12 + 9*uint(level-1) }

// Translate translates one request from source at input address iova. With
// translation off the address passes through. A failed translation is
// recorded in the fault registers and returned as a *Fault.
func (u *Unit) Translate(source uint16, iova uint64, write bool) (kernel.PhysAddr, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	p, f := u.translate(source, iova, write)
	if f != nil {
		return 0, f
	}
	return kernel.PhysAddr(p), nil
}

func (u *Unit) translate(src uint16, iova uint64, write bool) (uint64, *Fault) {
	p, f := u.remap(src, iova, write)
	if f == nil && u.protected(p) {
		// Blocked, and not a fault the unit records (10.4.16).
		u.stats.ProtectedBlocked++
		return 0, &Fault{Source: src, Addr: iova, Write: write, Reason: ReasonProtected}
	}
	return p, f
}

// protected reports whether physical address p lies in a protected
// memory region while they are enabled: the low one from PLMBASE up to
// and including the 2 MiB at PLMLIMIT, the high one likewise; a limit
// below its base makes no region (10.4.17-10.4.20).
func (u *Unit) protected(p uint64) bool {
	if u.pmen&PMEN_EPM == 0 {
		return false
	}
	in := func(base, limit uint64) bool { return base <= limit && p >= base && p < limit+1<<21 }
	return in(uint64(u.plm[0]), uint64(u.plm[1])) || in(u.phm[0], u.phm[1])
}

func (u *Unit) remap(src uint16, iova uint64, write bool) (uint64, *Fault) {
	if u.gsts&GSTS_TES == 0 {
		u.stats.Untranslated++
		return iova, nil
	}
	ctx, r := u.context(src)
	if r != 0 {
		return 0, u.fault(src, iova, write, r, false)
	}
	if ctx.tt() == ctxTTPass {
		if iova>>u.aw != 0 {
			return 0, u.fault(src, iova, write, ReasonBeyondWidth, ctx.fpd())
		}
		return iova, nil
	}
	width := min(u.aw, levelShift(ctx.levels()+1))
	if iova>>width != 0 {
		return 0, u.fault(src, iova, write, ReasonBeyondWidth, ctx.fpd())
	}
	need := uint64(slR)
	if write {
		need = slW
	}
	if u.cfg.IOTLB {
		for level := 1; level <= 3; level++ {
			sh := levelShift(level)
			e, ok := u.tlb[tlbKey{ctx.did(), uint8(level), iova >> sh}]
			if !ok {
				continue
			}
			u.stats.IOTLBHits++
			if e.perm&need == 0 {
				return 0, u.fault(src, iova, write, permReason(write), ctx.fpd())
			}
			return e.phys | iova&(1<<sh-1), nil
		}
		u.stats.IOTLBMisses++
	}
	phys, level, perm, r := u.walk(ctx, iova, need)
	if r != 0 {
		if perm == 0 && (r == ReasonRead || r == ReasonWrite) && u.cachingMode() {
			// Not present: cached as such for this page.
			u.cacheTLB(tlbKey{ctx.did(), 1, iova >> 12}, tlbEntry{})
		}
		return 0, u.fault(src, iova, write, r, ctx.fpd())
	}
	sh := levelShift(level)
	if u.cfg.IOTLB {
		u.cacheTLB(tlbKey{ctx.did(), uint8(level), iova >> sh}, tlbEntry{phys: phys, perm: perm})
	}
	return phys | iova&(1<<sh-1), nil
}

func (u *Unit) cacheTLB(k tlbKey, e tlbEntry) {
	if len(u.tlb) >= tlbMax {
		clear(u.tlb)
		u.stats.IOTLBEvictions++
	}
	u.tlb[k] = e
}

func permReason(write bool) Reason {
	if write {
		return ReasonWrite
	}
	return ReasonRead
}

// context finds the context entry for src through the root table, or in
// the context cache.
func (u *Unit) context(src uint16) (context, Reason) {
	if u.cfg.IOTLB {
		if c, ok := u.ctxCache[src]; ok {
			u.stats.ContextHits++
			return c, c.absent
		}
		u.stats.ContextMisses++
	}
	c, r := u.fetchContext(src)
	switch {
	case r == 0 && u.cfg.IOTLB:
		u.ctxCache[src] = c
	case (r == ReasonRootNotPresent || r == ReasonContextNotPresent) && u.cachingMode():
		u.ctxCache[src] = context{absent: r}
	}
	return c, r
}

func (u *Unit) cachingMode() bool { return u.cfg.IOTLB && u.cap&CAP_CM != 0 }

// fetchContext reads the context entry for src through the root table.
func (u *Unit) fetchContext(src uint16) (context, Reason) {
	if u.gsts&GSTS_RTPS == 0 {
		return context{}, ReasonRootTableAccess
	}
	rlo, rhi, err := u.read128(u.rta + uint64(src>>8)*16)
	if err != nil {
		return context{}, ReasonRootTableAccess
	}
	if rlo&entryPresent == 0 {
		return context{}, ReasonRootNotPresent
	}
	if rlo&0xffe != 0 || rhi != 0 || rlo&addrMask&^u.hawMask() != 0 {
		return context{}, ReasonRootReserved
	}
	lo, hi, err := u.read128(rlo&addrMask + uint64(src&0xff)*16)
	if err != nil {
		return context{}, ReasonContextAccess
	}
	c := context{lo: lo, hi: hi}
	if lo&entryPresent == 0 {
		return context{}, ReasonContextNotPresent
	}
	// Legacy context entry: lo 11:4 reserved, hi 7 and 63:24 reserved.
	if lo&0xff0 != 0 || hi&(1<<7|0xffff_ffff_ff00_0000) != 0 || c.table()&^u.hawMask() != 0 {
		return context{}, ReasonContextReserved
	}
	switch c.tt() {
	case ctxTTSL:
	case ctxTTDevTLB:
		if u.ecap&ECAP_DT == 0 {
			return context{}, ReasonContextInvalid
		}
	case ctxTTPass:
		if u.ecap&ECAP_PT == 0 {
			return context{}, ReasonContextInvalid
		}
	default:
		return context{}, ReasonContextInvalid
	}
	if c.tt() != ctxTTPass {
		sagaw := u.cap >> CAP_SAGAW_SHIFT & 0x1f
		if aw := c.aw(); aw > 4 || sagaw&(1<<aw) == 0 {
			return context{}, ReasonContextInvalid
		}
	}
	return c, 0
}

// walk walks the second-level tables for iova, checking the permission
// need at every level. It returns the leaf's output page, its level and
// the effective permissions.
func (u *Unit) walk(ctx context, iova, need uint64) (phys uint64, level int, perm uint64, r Reason) {
	u.stats.Walks++
	table, start := ctx.table(), ctx.levels()
	perm = slR | slW
	ps := u.cfg.IOTLB && u.cfg.PagingCache
	if ps {
		// Start from the deepest cached non-leaf entry.
		for l := 2; l <= ctx.levels(); l++ {
			if e, ok := u.pscache[tlbKey{ctx.did(), uint8(l), iova >> levelShift(l)}]; ok {
				u.stats.PagingHits++
				if e.perm&need == 0 {
					return 0, l, e.perm, permReason(need == slW)
				}
				table, start, perm = e.phys, l-1, e.perm
				break
			}
		}
	}
	sllps := u.cap >> CAP_SLLPS_SHIFT & 0xf
	for level = start; level >= 1; level-- {
		sh := levelShift(level)
		var b [8]byte
		if err := u.mem.DeviceRead(kernel.PhysAddr(table+(iova>>sh&0x1ff)*8), b[:]); err != nil {
			return 0, level, 0, ReasonPageTableAccess
		}
		e := binary.LittleEndian.Uint64(b[:])
		perm &= e
		if e&need == 0 {
			// Covers not-present entries (R=W=0) too; perm tells which.
			return 0, level, perm & (slR | slW), permReason(need == slW)
		}
		addr := e & addrMask
		if addr&^u.hawMask() != 0 {
			return 0, level, 0, ReasonPageReserved
		}
		leaf := level == 1
		if level > 1 && e&slPS != 0 {
			// PS is reserved where the page size is unsupported.
			if level > 3 || sllps&(1<<(level-2)) == 0 {
				return 0, level, 0, ReasonPageReserved
			}
			if addr&(1<<sh-1) != 0 {
				return 0, level, 0, ReasonPageReserved
			}
			leaf = true
		}
		if leaf {
			return addr, level, perm & (slR | slW), 0
		}
		if ps {
			u.cachePaging(tlbKey{ctx.did(), uint8(level), iova >> sh}, tlbEntry{phys: addr, perm: perm & (slR | slW)})
		}
		table = addr
	}
	return 0, 1, 0, ReasonPageTableAccess // unreachable: level 1 is a leaf
}

func (u *Unit) cachePaging(k tlbKey, e tlbEntry) {
	if len(u.pscache) >= tlbMax {
		clear(u.pscache)
		u.stats.IOTLBEvictions++
	}
	u.pscache[k] = e
}

func (u *Unit) read128(p uint64) (lo, hi uint64, err error) {
	var b [16]byte
	if err := u.mem.DeviceRead(kernel.PhysAddr(p), b[:]); err != nil {
		return 0, 0, err
	}
	return binary.LittleEndian.Uint64(b[:8]), binary.LittleEndian.Uint64(b[8:]), nil
}
