package iommu

import "fmt"

// Fault is one primary fault record: a DMA the unit refused, or, with
// interrupt remapping, an interrupt it blocked.
type Fault struct {
	Source uint16 // requester id: bus<<8 | dev<<3 | fn
	Addr   uint64 // faulting page address (a DMA)
	Write  bool   // the request was a write (false: read)
	Reason uint8  // fault reason code
	// Interrupt marks a blocked interrupt (reasons 0x20-0x26); Index is
	// the remapping entry it named (the record's FI, bits 63:48).
	Interrupt bool
	Index     uint16
}

// faultReasons names the legacy-mode fault reason codes (VT-d specification,
// appendix A).
var faultReasons = map[uint8]string{
	0x1: "root entry not present",
	0x2: "context entry not present",
	0x3: "invalid context entry",
	0x4: "address beyond the guest address width",
	0x5: "write to a page without write permission",
	0x6: "read of a page without read permission",
	0x7: "next page table pointer invalid",
	0x8: "root table address invalid",
	0x9: "context table pointer invalid",
	0xa: "reserved bits set in a root entry",
	0xb: "reserved bits set in a context entry",
	0xc: "reserved bits set in a page table entry",
	0xd: "request blocked by the translation type",
	// Interrupt remapping (VT-d specification 7.1.3).
	0x20: "reserved field set in an interrupt request",
	0x21: "interrupt index beyond the table",
	0x22: "interrupt entry not present",
	0x23: "interrupt table unreadable",
	0x24: "reserved bits set in an interrupt entry",
	0x25: "compatibility-format interrupt blocked",
	0x26: "interrupt from a requester its entry does not name",
}

// interruptReason reports whether a reason code is an interrupt
// remapping fault's.
func interruptReason(r uint8) bool { return r >= 0x20 && r <= 0x26 }

// ReasonText describes the fault reason.
func (f Fault) ReasonText() string {
	if s, ok := faultReasons[f.Reason]; ok {
		return s
	}
	return "unknown reason"
}

func (f Fault) String() string {
	if f.Interrupt {
		return fmt.Sprintf("%s interrupt entry %d reason %#x (%s)", SourceString(f.Source), f.Index, f.Reason, f.ReasonText())
	}
	kind := "read"
	if f.Write {
		kind = "write"
	}
	return fmt.Sprintf("%s %s %#x reason %#x (%s)", SourceString(f.Source), kind, f.Addr, f.Reason, f.ReasonText())
}

// faultLogMax bounds the faults kept for Faults; older ones are dropped but
// still counted.
const faultLogMax = 256

// Faults reads and clears the unit's fault recording registers and returns
// every fault seen since the last ClearFaults, oldest first.
func (u *Unit) Faults() []Fault {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.pollFaults()
	return append([]Fault(nil), u.faultLog...)
}

// ClearFaults reads and clears the fault registers and forgets the faults
// seen so far. The counters keep them.
func (u *Unit) ClearFaults() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.pollFaults()
	u.faultLog = u.faultLog[:0]
}

// SignalFaults has the unit announce faults with an interrupt message,
// data written to addr (an MSI to a local APIC). The unit sends it when it
// records a fault while none was pending, or overflows (VT-d spec 7.3.1);
// pollFaults clears the records, so the next fault is announced again.
func (u *Unit) SignalFaults(addr uint64, data uint32) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.regs.Write32(regFECTL, fectlIM)
	u.regs.Write32(regFEDATA, data)
	u.regs.Write32(regFEADDR, uint32(addr))
	u.regs.Write32(regFEUADDR, uint32(addr>>32))
	u.regs.Write32(regFECTL, 0)
}

// FaultEvent is the handling of this unit's fault event: it counts the
// interrupt and moves the fault records into the log, which clears them
// so the unit can announce the next one.
func (u *Unit) FaultEvent() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.stats.FaultEvents++
	u.pollFaults()
}

// pollFaults moves every valid fault record into the log: read the record,
// write 1 to its F bit, then clear the overflow flag in FSTS. It returns
// how many records it found.
func (u *Unit) pollFaults() int {
	fsts := u.regs.Read32(regFSTS)
	if fsts&(fstsPPF|fstsPFO) == 0 {
		return 0
	}
	n := 0
	nfr := u.caps.NFR
	start := int(fsts>>fstsFRIShift&0xff) % nfr
	for k := range nfr {
		off := u.caps.FRO + uint32((start+k)%nfr)*frcdSize
		hi := u.regs.Read64(off + 8)
		if hi&frcdF == 0 {
			continue
		}
		lo := u.regs.Read64(off)
		f := Fault{
			Source: uint16(hi),
			Addr:   lo &^ (1<<pageShift - 1),
			Write:  hi&frcdTypeRead == 0,
			Reason: uint8(hi >> frcdReasonShift),
		}
		if interruptReason(f.Reason) {
			f.Interrupt, f.Index, f.Addr, f.Write = true, uint16(lo>>48), 0, false
		}
		u.regs.Write32(off+12, uint32(frcdF>>32))
		if len(u.faultLog) >= faultLogMax {
			copy(u.faultLog, u.faultLog[1:])
			u.faultLog = u.faultLog[:len(u.faultLog)-1]
		}
		u.faultLog = append(u.faultLog, f)
		u.stats.Faults++
		if f.Interrupt {
			// Not the device's DMA: its descriptors' data is sound.
			u.stats.InterruptFaults++
		} else if d, ok := u.domains[f.Source]; ok {
			d.faults++
		}
		n++
	}
	if fsts&fstsPFO != 0 {
		u.stats.FaultOverflows++
		u.regs.Write32(regFSTS, fstsPFO)
	}
	return n
}

// DMAFaults reads the fault recording registers and returns how many
// faults the unit has recorded for this domain's device so far. A driver
// compares it across a poll: a NIC marks a descriptor done even when the
// unit refused its data write.
func (d *Domain) DMAFaults() uint64 {
	d.u.mu.Lock()
	defer d.u.mu.Unlock()
	d.u.pollFaults()
	return d.faults
}
