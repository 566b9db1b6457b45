package vtd

// Register access. 64-bit registers may also be reached as two 32-bit
// halves; a command register (CCMD, IOTLB) acts when its upper half, which
// holds the command bit, is written.

// is64 reports whether off is the start of a 64-bit register.
func (u *Unit) is64(off uint32) bool {
	switch off {
	case CAP, ECAP, RTADDR, CCMD, AFLOG, IQH, IQT, IQA, IRTA, IVA, IOTLB, PHMBASE, PHMLIM:
		return true
	}
	return off >= FRCD && off < FRCD+uint32(len(u.frcds))*16
}

// Read32 reads a 32-bit register or half of a 64-bit one.
func (u *Unit) Read32(off uint32) uint32 {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.read32(off)
}

// Read64 reads a 64-bit register, or two adjacent 32-bit ones.
func (u *Unit) Read64(off uint32) uint64 {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.is64(off) {
		return u.read64(off)
	}
	return uint64(u.read32(off)) | uint64(u.read32(off+4))<<32
}

// Write32 writes a 32-bit register or half of a 64-bit one.
func (u *Unit) Write32(off uint32, v uint32) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.write32(off, v)
}

// Write64 writes a 64-bit register, or two adjacent 32-bit ones.
func (u *Unit) Write64(off uint32, v uint64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.is64(off) {
		u.write64(off, v)
		return
	}
	u.write32(off, uint32(v))
	u.write32(off+4, uint32(v>>32))
}

func (u *Unit) read32(off uint32) uint32 {
	if u.is64(off &^ 7) {
		v := u.read64(off &^ 7)
		if off&4 != 0 {
			return uint32(v >> 32)
		}
		return uint32(v)
	}
	switch off {
	case VER:
		return uint32(u.version())
	case GCMD:
		return 0 // write-only
	case GSTS:
		return u.gsts
	case FSTS:
		return u.fstsValue()
	case FECTL:
		return u.fectl
	case FEDATA:
		return u.fedata
	case FEADDR:
		return u.feaddr
	case FEUADDR:
		return u.feuaddr
	case PMEN:
		return u.pmen
	case PLMBASE, PLMLIM:
		return u.plm[(off-PLMBASE)/4]
	case ICS:
		return u.ics
	case IECTL:
		return u.iectl
	case IEDATA:
		return u.iedata
	case IEADDR:
		return u.ieaddr
	case IEUADDR:
		return u.ieuaddr
	}
	return 0
}

func (u *Unit) read64(off uint32) uint64 {
	switch off {
	case CAP:
		return u.cap
	case ECAP:
		return u.ecap
	case RTADDR:
		return u.rtaddr
	case CCMD:
		return u.ccmd
	case AFLOG:
		return u.aflog
	case IQH:
		return u.iqh
	case IQT:
		return u.iqt
	case IQA:
		return u.iqa
	case IRTA:
		return u.irta
	case IVA:
		return u.iva
	case IOTLB:
		return u.iotlb
	case PHMBASE, PHMLIM:
		return u.phm[(off-PHMBASE)/8]
	}
	if i, hi, ok := u.frcdIndex(off); ok {
		if hi {
			return u.frcds[i].hi
		}
		return u.frcds[i].lo
	}
	return 0
}

// frcdIndex maps an offset inside the fault recording registers to a record
// and quadword.
func (u *Unit) frcdIndex(off uint32) (i int, hi, ok bool) {
	if off < FRCD || off >= FRCD+uint32(len(u.frcds))*16 {
		return 0, false, false
	}
	rel := off - FRCD
	return int(rel / 16), rel%16 >= 8, true
}

func (u *Unit) write32(off uint32, v uint32) {
	if base := off &^ 7; u.is64(base) {
		cur := u.read64(base)
		if off&4 == 0 {
			// Lower half: latch it; commands act on the upper half.
			cur = cur&^0xffff_ffff | uint64(v)
			u.store64(base, cur)
			return
		}
		u.write64(base, cur&0xffff_ffff|uint64(v)<<32)
		return
	}
	switch off {
	case GCMD:
		u.command(v)
	case FSTS:
		// PFO, IQE, ICE and ITE are write-1-to-clear; PPF and FRI are
		// read-only.
		u.fsts &^= v & (FSTS_PFO | FSTS_IQE | FSTS_ICE | FSTS_ITE)
		u.faultsMaybeCleared()
		u.runQueue() // a cleared queue error lets the queue resume
	case FECTL:
		u.fectl = u.fectl&^FECTL_IM | v&FECTL_IM
		if u.fectl&FECTL_IM == 0 && u.fectl&FECTL_IP != 0 {
			u.fectl &^= FECTL_IP
			u.deliver()
		}
	case FEDATA:
		u.fedata = v
	case FEADDR:
		u.feaddr = v &^ 3
	case FEUADDR:
		u.feuaddr = v
	case PMEN:
		// The status bit follows the enable bit at once. Without
		// CAP.PLMR and PHMR there are no regions to enable.
		u.pmen = v & PMEN_EPM
		if u.pmen != 0 {
			u.pmen |= PMEN_PRS
		}
	case PLMBASE, PLMLIM:
		if u.cfg.PMR && u.pmen&PMEN_EPM == 0 { // locked while enabled
			u.plm[(off-PLMBASE)/4] = v &^ 0x1fffff // 2 MiB granular
		}
	case ICS:
		u.ics &^= v & ICS_IWC
		if u.ics&ICS_IWC == 0 {
			u.iectl &^= IECTL_IP
		}
	case IECTL:
		u.iectl = u.iectl&^IECTL_IM | v&IECTL_IM
		if u.iectl&IECTL_IM == 0 {
			u.iectl &^= IECTL_IP // the pending completion event is delivered
		}
	case IEDATA:
		u.iedata = v
	case IEADDR:
		u.ieaddr = v &^ 3
	case IEUADDR:
		u.ieuaddr = v
	}
}

// store64 stores a 64-bit register without acting on it.
func (u *Unit) store64(off uint32, v uint64) {
	switch off {
	case RTADDR:
		u.rtaddr = v
	case CCMD:
		u.ccmd = v
	case AFLOG:
		u.aflog = v
	case IQT:
		u.iqt = v & 0x7fff0
		u.runQueue()
	case IQA:
		u.iqa = v
	case IRTA:
		if u.ecap&ECAP_EIM == 0 {
			v &^= IRTA_EIME // reserved, reads zero (10.4.29)
		}
		u.irta = v
	case IVA:
		u.iva = v
	case IOTLB:
		u.iotlb = v
	case PHMBASE, PHMLIM:
		if u.cfg.PMR && u.pmen&PMEN_EPM == 0 { // locked while enabled
			u.phm[(off-PHMBASE)/8] = v &^ 0x1fffff
		}
	}
	// CAP, ECAP, IQH and the fault records' lower halves are read-only.
}

func (u *Unit) write64(off uint32, v uint64) {
	switch off {
	case CCMD:
		u.ccmd = v
		if v&CCMD_ICC != 0 {
			u.invalidateContext(v)
		}
		return
	case IOTLB:
		u.iotlb = v
		if v&IOTLB_IVT != 0 {
			u.invalidateIOTLB(v)
		}
		return
	}
	if i, hi, ok := u.frcdIndex(off); ok {
		if hi && v&FRCD_F != 0 && u.frcds[i].hi&FRCD_F != 0 {
			u.frcds[i].hi &^= FRCD_F
			u.faultsMaybeCleared()
		}
		return
	}
	u.store64(off, v)
}

// command carries out a GCMD write. Software builds each write from GSTS
// plus one command bit; the model acts on every bit it is given.
func (u *Unit) command(v uint32) {
	if v&GCMD_SRTP != 0 {
		// Only legacy-mode tables are modelled: the table-mode bits
		// (RTADDR 11:10) are ignored.
		u.rta = u.rtaddr & addrMask & u.hawMask()
		u.gsts |= GSTS_RTPS
		u.stats.RootPointerLoads++
	}
	if v&GCMD_SIRTP != 0 {
		// 10.4.4: the table base, EIME and size are latched; cached
		// entries stay until software invalidates the interrupt entry
		// cache, as it must after setting the pointer.
		u.irt = u.irta
		u.gsts |= GSTS_IRTPS
		u.stats.IRTableLoads++
	}
	if v&GCMD_SFL != 0 {
		u.gsts |= GSTS_FLS
	}
	// WBF completes at once: WBFS reads clear.
	u.setStatus(v, GCMD_TE, GSTS_TES)
	u.setStatus(v, GCMD_EAFL, GSTS_AFLS)
	qiWasOn := u.gsts&GSTS_QIES != 0
	u.setStatus(v, GCMD_QIE, GSTS_QIES)
	u.setStatus(v, GCMD_IRE, GSTS_IRES)
	u.setStatus(v, GCMD_CFI, GSTS_CFIS)
	switch {
	case v&GCMD_QIE == 0:
		u.iqh = 0 // disabling queued invalidation resets the head
	case !qiWasOn:
		u.runQueue() // descriptors queued before enabling
	}
}

func (u *Unit) setStatus(v, cmd, sts uint32) {
	if v&cmd != 0 {
		u.gsts |= sts
	} else {
		u.gsts &^= sts
	}
}

// hawMask keeps the address bits below the host address width.
func (u *Unit) hawMask() uint64 { return 1<<u.aw - 1 }
