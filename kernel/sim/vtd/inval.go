package vtd

// Register-based invalidation of the context cache and the IOTLB. Each
// request drops exactly what its granularity covers, so a missing or too
// narrow invalidation leaves a stale entry in place.

func (u *Unit) invalidateContext(v uint64) {
	if u.gsts&GSTS_QIES != 0 {
		u.stats.IgnoredInvals++
		return
	}
	u.spin()
	g := v >> CCMD_CIRG_SHIFT & ccmdGranularMask
	did := uint16(v)
	switch g {
	case CCMD_GLOBAL:
		clear(u.ctxCache)
		u.stats.ContextGlobal++
	case CCMD_DOMAIN:
		for sid, c := range u.ctxCache {
			if c.did() == did {
				delete(u.ctxCache, sid)
			}
		}
		u.stats.ContextDomain++
	case CCMD_DEVICE:
		// FM masks the top 0..3 bits of the function number.
		fm := v >> CCMD_FM_SHIFT & 3
		mask := ^uint16((1<<fm - 1) << (3 - fm))
		sid := uint16(v >> CCMD_SID_SHIFT)
		for s, c := range u.ctxCache {
			if s&mask == sid&mask && c.did() == did {
				delete(u.ctxCache, s)
			}
		}
		u.stats.ContextDevice++
	default:
		g = 0 // invalid request: ignored, reported as CAIG 0
	}
	u.ccmd = v&^(CCMD_ICC|ccmdGranularMask<<CCMD_CAIG_SHIFT) | g<<CCMD_CAIG_SHIFT
}

func (u *Unit) invalidateIOTLB(v uint64) {
	if u.gsts&GSTS_QIES != 0 {
		u.stats.IgnoredInvals++
		return
	}
	u.spin()
	g := v >> IOTLB_IIRG_SHIFT & 3
	did := uint16(v >> IOTLB_DID_SHIFT)
	if g == IOTLB_PAGE && u.cap&CAP_PSI == 0 {
		g = IOTLB_DOMAIN // without PSI hardware flushes the domain
	}
	switch g {
	case IOTLB_GLOBAL:
		clear(u.tlb)
		u.stats.IOTLBGlobal++
	case IOTLB_DOMAIN:
		for k := range u.tlb {
			if k.did == did {
				delete(u.tlb, k)
			}
		}
		u.stats.IOTLBDomain++
	case IOTLB_PAGE:
		am := u.iva & IVA_AM_MASK
		if am > maxAM {
			g = 0
			u.stats.IOTLBRejected++
			break
		}
		// Hardware ignores the address bits below the mask.
		start := u.iva & addrMask &^ (1<<(12+am) - 1)
		end := start + 1<<(12+am)
		for k := range u.tlb {
			sh := levelShift(int(k.level))
			lo := k.pfn << sh
			if k.did == did && lo < end && start < lo+1<<sh {
				delete(u.tlb, k)
			}
		}
		u.stats.IOTLBPage++
	default:
		g = 0
		u.stats.IOTLBRejected++
	}
	u.iotlb = v&^(IOTLB_IVT|3<<IOTLB_IAIG_SHIFT) | g<<IOTLB_IAIG_SHIFT
}
