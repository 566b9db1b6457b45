package vtd

// Interrupt remapping (VT-d specification, chapter 5). A device's
// interrupt is a DWORD write to 0xFEEx_xxxx. With remapping enabled
// (GSTS.IRES) a request in remappable format names an entry of the
// interrupt remapping table latched from IRTA, and the entry, not the
// request, says which vector reaches which processor and how.

// irte is an interrupt remapping table entry as fetched (9.10).
type irte struct{ lo, hi uint64 }

func (e irte) present() bool { return e.lo&IRTE_P != 0 }
func (e irte) fpd() bool     { return e.lo&IRTE_FPD != 0 }
func (e irte) svt() uint64   { return e.hi >> IRTE_SVT_SHIFT & 3 }
func (e irte) sq() uint64    { return e.hi >> IRTE_SQ_SHIFT & 3 }
func (e irte) sid() uint16   { return uint16(e.hi >> IRTE_SID_SHIFT) }

// Reserved bits of a remapped-format IRTE (9.10): lower 14:12 and 31:24,
// IM (15) since posting is not supported, and in xAPIC mode the
// destination bits other than 47:40; upper 127:84.
const (
	irteReservedLo      = 0x7<<12 | IRTE_IM | 0xff<<24
	irteReservedLoXAPIC = 0xffff_00ff_0000_0000
	irteReservedHi      = 0xffff_ffff_fff0_0000
)

// reserved reports a reserved field set, SVT's reserved encoding (11b)
// included.
func (e irte) reserved(eime bool) bool {
	mask := uint64(irteReservedLo)
	if !eime {
		mask |= irteReservedLoXAPIC
	}
	return e.lo&mask != 0 || e.hi&irteReservedHi != 0 || e.svt() == 3
}

// sourceOK carries out the entry's source validation (9.10, SVT/SQ/SID).
func (e irte) sourceOK(src uint16) bool {
	switch e.svt() {
	case SVT_SID:
		// SQ masks the low function bits out of the comparison.
		mask := [4]uint16{0xffff, 0xfffb, 0xfff9, 0xfff8}[e.sq()]
		return src&mask == e.sid()&mask
	case SVT_BUS:
		bus := uint8(src >> 8)
		return bus >= uint8(e.sid()>>8) && bus <= uint8(e.sid())
	}
	return true // SVT_NONE; 11b is caught as reserved
}

// Interrupt remaps the interrupt request a device with requester id sid
// made by writing data to addr, and returns the compatibility-format
// message the local APIC receives: address 0xFEE00000 with the
// destination in 19:12 (x2APIC mode: its upper 24 bits in 63:40), RH in
// 3 and DM in 2; data the vector, the delivery mode in 10:8 and the
// trigger mode in 15. A blocked request returns ok false, its fault
// recorded unless the entry's FPD suppresses it.
//
// With remapping off the request passes unchanged, as it does in
// compatibility format while GSTS.CFIS is set (and IRTA.EIME clear).
func (u *Unit) Interrupt(sid uint16, addr uint64, data uint32) (outAddr uint64, outData uint32, ok bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.gsts&GSTS_IRES == 0 {
		u.stats.InterruptsPassed++
		return addr, data, true
	}
	eime := u.irt&IRTA_EIME != 0
	if addr&MSI_ADDR_FORMAT == 0 {
		// 5.1.2.1: compatibility format is let through only by CFIS,
		// and never in x2APIC mode.
		if u.gsts&GSTS_CFIS == 0 || eime {
			return u.blockInterrupt(sid, addr, 0, ReasonIRCompat, false)
		}
		u.stats.InterruptsPassed++
		return addr, data, true
	}
	handle := uint16(addr>>MSI_ADDR_HANDLE_SHIFT&0x7fff) | uint16(addr>>2&1)<<15
	if addr>>32 != 0 || addr&MSI_ADDR_WINDOW_MASK != MSI_ADDR_WINDOW {
		return u.blockInterrupt(sid, addr, handle, ReasonIRRequestReserved, false)
	}
	index := uint32(handle)
	if addr&MSI_ADDR_SHV != 0 {
		// Data bits 31:16 are reserved when the subhandle is valid.
		if data>>16 != 0 {
			return u.blockInterrupt(sid, addr, handle, ReasonIRRequestReserved, false)
		}
		index += data & 0xffff
	}
	if index >= 2<<(u.irt&IRTA_S_MASK) {
		return u.blockInterrupt(sid, addr, uint16(index), ReasonIRIndex, false)
	}
	e, ok := u.fetchIRTE(index, eime)
	if !ok {
		return u.blockInterrupt(sid, addr, uint16(index), ReasonIRTableAccess, false)
	}
	// FPD is evaluated whether or not P is set (9.10): every fault from
	// here on is a qualified one.
	switch {
	case !e.present():
		return u.blockInterrupt(sid, addr, uint16(index), ReasonIRNotPresent, e.fpd())
	case e.reserved(eime):
		return u.blockInterrupt(sid, addr, uint16(index), ReasonIRReserved, e.fpd())
	case !e.sourceOK(sid):
		return u.blockInterrupt(sid, addr, uint16(index), ReasonIRSource, e.fpd())
	}
	var dst uint32
	if eime {
		dst = uint32(e.lo >> IRTE_DST_SHIFT)
	} else {
		dst = uint32(e.lo >> (IRTE_DST_SHIFT + 8) & 0xff)
	}
	outAddr = MSI_ADDR_WINDOW | uint64(dst&0xff)<<MSI_ADDR_DST_SHIFT | uint64(dst>>8)<<40
	if e.lo&IRTE_DM != 0 {
		outAddr |= MSI_ADDR_DM
	}
	if e.lo&IRTE_RH != 0 {
		outAddr |= MSI_ADDR_RH
	}
	outData = uint32(e.lo>>IRTE_V_SHIFT&0xff) | uint32(e.lo>>IRTE_DLM_SHIFT&7)<<MSI_DATA_DLM_SHIFT
	if e.lo&IRTE_TM != 0 {
		outData |= MSI_DATA_TM
	}
	u.stats.InterruptsRemapped++
	return outAddr, outData, true
}

func (u *Unit) blockInterrupt(sid uint16, addr uint64, index uint16, r Reason, fpd bool) (uint64, uint32, bool) {
	u.irFault(sid, addr, index, r, fpd)
	u.stats.InterruptsBlocked++
	return 0, 0, false
}

// fetchIRTE returns entry index from the interrupt entry cache, or reads
// it from the table latched by SIRTP, through the unit's Memory (snooped
// or not as ECAP.C says). With caches on, a present and well-formed entry
// is kept until an IEC invalidation covers it (6.2.x, 6.5.2.7); under
// caching mode any entry is, as CAP.CM allows.
func (u *Unit) fetchIRTE(index uint32, eime bool) (irte, bool) {
	if u.cfg.IOTLB {
		if e, ok := u.iec[uint16(index)]; ok {
			u.stats.IECHits++
			return e, true
		}
		u.stats.IECMisses++
	}
	if u.gsts&GSTS_IRTPS == 0 {
		return irte{}, false // no table pointer was ever set
	}
	lo, hi, err := u.read128(u.irt&addrMask&u.hawMask() + uint64(index)*16)
	if err != nil {
		return irte{}, false
	}
	e := irte{lo, hi}
	if u.cfg.IOTLB && (u.cachingMode() || e.present() && !e.reserved(eime)) {
		u.iec[uint16(index)] = e
	}
	return e, true
}

// iecInval drops interrupt entry cache entries (6.5.2.7): every one, or
// the 2^im entries from idx with its low im bits cleared.
func (u *Unit) iecInval(selective bool, idx uint16, im uint64) {
	u.spin()
	if !selective {
		clear(u.iec)
		u.stats.IECGlobal++
		return
	}
	mask := uint32(1)<<im - 1
	for i := range u.iec {
		if uint32(i)&^mask == uint32(idx)&^mask {
			delete(u.iec, i)
		}
	}
	u.stats.IECIndex++
}
