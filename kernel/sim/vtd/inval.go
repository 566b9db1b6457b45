package vtd

// Invalidation of the context cache and the IOTLB, by register or through
// the invalidation queue. Each request drops exactly what its granularity
// covers, so a missing or too narrow invalidation leaves a stale entry in
// place.

func (u *Unit) invalidateContext(v uint64) {
	if u.gsts&GSTS_QIES != 0 || !u.registerInvalidation() {
		u.stats.IgnoredInvals++
		return
	}
	g := u.contextInval(v>>CCMD_CIRG_SHIFT&ccmdGranularMask, uint16(v), uint16(v>>CCMD_SID_SHIFT), v>>CCMD_FM_SHIFT&3)
	u.ccmd = v&^(CCMD_ICC|ccmdGranularMask<<CCMD_CAIG_SHIFT) | g<<CCMD_CAIG_SHIFT
}

func (u *Unit) invalidateIOTLB(v uint64) {
	if u.gsts&GSTS_QIES != 0 || !u.registerInvalidation() {
		u.stats.IgnoredInvals++
		return
	}
	g := u.iotlbInval(v>>IOTLB_IIRG_SHIFT&3, uint16(v>>IOTLB_DID_SHIFT), u.iva&addrMask, u.iva&IVA_AM_MASK, u.iva&IVA_IH != 0)
	u.iotlb = v&^(IOTLB_IVT|3<<IOTLB_IAIG_SHIFT) | g<<IOTLB_IAIG_SHIFT
}

// version is VER as the configuration gives it.
func (u *Unit) version() uint8 {
	if u.cfg.Version == 0 {
		return 0x10
	}
	return u.cfg.Version
}

// registerInvalidation reports whether the unit has the register-based
// invalidation interface: not from major version 6 (VT-d 3.3, 6.5).
func (u *Unit) registerInvalidation() bool { return u.version()>>4 < 6 }

// contextInval drops context-cache entries and returns the granularity
// actually performed (0: request invalid and ignored).
func (u *Unit) contextInval(g uint64, did, sid uint16, fm uint64) uint64 {
	u.spin()
	switch g {
	case CCMD_GLOBAL:
		clear(u.ctxCache)
		u.stats.ContextGlobal++
	case CCMD_DOMAIN:
		for s, c := range u.ctxCache {
			if c.did() == did {
				delete(u.ctxCache, s)
			}
		}
		u.stats.ContextDomain++
	case CCMD_DEVICE:
		// FM masks the top 0..3 bits of the function number.
		mask := ^uint16((1<<fm - 1) << (3 - fm))
		for s, c := range u.ctxCache {
			if s&mask == sid&mask && c.did() == did {
				delete(u.ctxCache, s)
			}
		}
		u.stats.ContextDevice++
	default:
		return 0
	}
	return g
}

// iotlbInval drops IOTLB and paging-structure cache entries and returns
// the granularity actually performed (0: request invalid and ignored). A
// page-selective request with the invalidation hint ih set says only leaf
// entries changed: cached non-leaf entries stay.
func (u *Unit) iotlbInval(g uint64, did uint16, addr, am uint64, ih bool) uint64 {
	u.spin()
	if g == IOTLB_PAGE && u.cap&CAP_PSI == 0 {
		g = IOTLB_DOMAIN // without PSI hardware flushes the domain
	}
	switch g {
	case IOTLB_GLOBAL:
		clear(u.tlb)
		clear(u.pscache)
		u.stats.IOTLBGlobal++
	case IOTLB_DOMAIN:
		for _, c := range []map[tlbKey]tlbEntry{u.tlb, u.pscache} {
			for k := range c {
				if k.did == did {
					delete(c, k)
				}
			}
		}
		u.stats.IOTLBDomain++
	case IOTLB_PAGE:
		if am > maxAM {
			u.stats.IOTLBRejected++
			return 0
		}
		// Hardware ignores the address bits below the mask.
		start := addr &^ (1<<(12+am) - 1)
		end := start + 1<<(12+am)
		dropRange(u.tlb, did, start, end)
		if !ih {
			dropRange(u.pscache, did, start, end)
		}
		u.stats.IOTLBPage++
	default:
		u.stats.IOTLBRejected++
		return 0
	}
	return g
}

// dropRange deletes the entries of domain did whose input range overlaps
// [start, end).
func dropRange(c map[tlbKey]tlbEntry, did uint16, start, end uint64) {
	for k := range c {
		sh := levelShift(int(k.level))
		lo := k.pfn << sh
		if k.did == did && lo < end && start < lo+1<<sh {
			delete(c, k)
		}
	}
}
