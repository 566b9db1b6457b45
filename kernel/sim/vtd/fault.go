package vtd

import "fmt"

// Reason is a fault reason code (VT-d specification, appendix A).
type Reason uint8

const (
	ReasonRootNotPresent    Reason = 0x1 // root entry present bit clear
	ReasonContextNotPresent Reason = 0x2 // context entry present bit clear
	ReasonContextInvalid    Reason = 0x3 // context entry programmed wrongly (TT, AW)
	ReasonBeyondWidth       Reason = 0x4 // input address above the address width
	ReasonWrite             Reason = 0x5 // write without write permission
	ReasonRead              Reason = 0x6 // read without read permission
	ReasonPageTableAccess   Reason = 0x7 // second-level entry fetch failed
	ReasonRootTableAccess   Reason = 0x8 // root entry fetch failed
	ReasonContextAccess     Reason = 0x9 // context entry fetch failed
	ReasonRootReserved      Reason = 0xA // reserved bit set in a root entry
	ReasonContextReserved   Reason = 0xB // reserved bit set in a context entry
	ReasonPageReserved      Reason = 0xC // reserved bit set in a second-level entry

	// ReasonProtected is no VT-d code: a request blocked by a protected
	// memory region, which the unit does not record.
	ReasonProtected Reason = 0xff

	// Interrupt remapping faults (7.1.3).
	ReasonIRRequestReserved Reason = 0x20 // reserved field set in the interrupt request
	ReasonIRIndex           Reason = 0x21 // interrupt index beyond the table (IRTA.S)
	ReasonIRNotPresent      Reason = 0x22 // IRTE present bit clear
	ReasonIRTableAccess     Reason = 0x23 // IRTE fetch failed
	ReasonIRReserved        Reason = 0x24 // reserved field set in a present IRTE
	ReasonIRCompat          Reason = 0x25 // compatibility format blocked (CFIS clear or EIME set)
	ReasonIRSource          Reason = 0x26 // source validation failed (IRTE SVT, SQ, SID)
)

var reasonNames = map[Reason]string{
	ReasonRootNotPresent:    "root entry not present",
	ReasonContextNotPresent: "context entry not present",
	ReasonContextInvalid:    "context entry invalid",
	ReasonBeyondWidth:       "address beyond width",
	ReasonWrite:             "write not permitted",
	ReasonRead:              "read not permitted",
	ReasonPageTableAccess:   "page table access error",
	ReasonRootTableAccess:   "root table access error",
	ReasonContextAccess:     "context table access error",
	ReasonRootReserved:      "root entry reserved bit set",
	ReasonContextReserved:   "context entry reserved bit set",
	ReasonPageReserved:      "page table entry reserved bit set",
	ReasonIRRequestReserved: "interrupt request reserved field set",
	ReasonIRIndex:           "interrupt index beyond the table",
	ReasonIRNotPresent:      "interrupt remapping entry not present",
	ReasonIRTableAccess:     "interrupt remapping table access error",
	ReasonIRReserved:        "interrupt remapping entry reserved field set",
	ReasonIRCompat:          "compatibility format interrupt blocked",
	ReasonIRSource:          "interrupt source validation failed",
	ReasonProtected:         "blocked by a protected memory region",
}

func (r Reason) String() string {
	if s, ok := reasonNames[r]; ok {
		return s
	}
	return fmt.Sprintf("reason %#x", uint8(r))
}

// Fault is a failed translation, or a blocked interrupt request. It is
// the error Translate returns.
type Fault struct {
	Source   uint16 // requester id: bus<<8 | dev<<3 | fn
	Addr     uint64 // the faulting input address (page-aligned in the record)
	Write    bool
	Reason   Reason
	Recorded bool // written into a fault recording register

	// Interrupt marks an interrupt-remapping fault: Addr is the
	// request's address and Index the interrupt index the record holds.
	Interrupt bool
	Index     uint16
}

func (f *Fault) Error() string {
	if f.Interrupt {
		return fmt.Sprintf("vtd: interrupt request %#x (index %#x) by %02x:%02x.%x: %v (fault reason %#x)",
			f.Addr, f.Index, f.Source>>8, f.Source>>3&0x1f, f.Source&7, f.Reason, uint8(f.Reason))
	}
	dir := "read"
	if f.Write {
		dir = "write"
	}
	return fmt.Sprintf("vtd: dma %s of %#x by %02x:%02x.%x: %v (fault reason %#x)",
		dir, f.Addr, f.Source>>8, f.Source>>3&0x1f, f.Source&7, f.Reason, uint8(f.Reason))
}

const faultLogMax = 4096

// fault handles one translation fault: logs it and, unless the context
// entry disables fault processing or the records overflowed, records it.
func (u *Unit) fault(src uint16, addr uint64, write bool, r Reason, fpd bool) *Fault {
	f := &Fault{Source: src, Addr: addr, Write: write, Reason: r}
	hi := uint64(r)<<FRCD_FR_SHIFT | uint64(src)
	if !write {
		hi |= FRCD_T
	}
	u.record(f, addr&^0xfff, hi, fpd)
	return f
}

// irFault handles one interrupt-remapping fault as fault does a
// translation fault. The record's fault info holds the interrupt index in
// bits 63:48 (47:12 clear); T matters only for DMA faults and stays clear,
// an interrupt request being a write (10.4.14).
func (u *Unit) irFault(src uint16, addr uint64, index uint16, r Reason, fpd bool) *Fault {
	f := &Fault{Source: src, Addr: addr, Write: true, Reason: r, Interrupt: true, Index: index}
	u.record(f, uint64(index)<<FRCD_FI_IR_SHIFT, uint64(r)<<FRCD_FR_SHIFT|uint64(src), fpd)
	return f
}

// record logs f and, unless fpd or an overflow stops it, writes lo and hi
// (F added) into the next fault recording register.
func (u *Unit) record(f *Fault, lo, hi uint64, fpd bool) {
	u.stats.Faults++
	defer u.logFault(f)
	if fpd {
		return
	}
	if u.fsts&FSTS_PFO != 0 {
		// Hardware records nothing more until software clears PFO.
		u.stats.FaultsDropped++
		return
	}
	i := u.nextRec
	if u.frcds[i].hi&FRCD_F != 0 {
		u.fsts |= FSTS_PFO
		u.stats.FaultsDropped++
		u.event()
		return
	}
	wasPending := u.ppf()
	u.frcds[i] = frcd{lo: lo, hi: FRCD_F | hi}
	u.nextRec = (i + 1) % len(u.frcds)
	f.Recorded = true
	u.stats.FaultsRecorded++
	if !wasPending {
		u.fsts = u.fsts&^(0xff<<FSTS_FRI_SHIFT) | uint32(i)<<FSTS_FRI_SHIFT
		u.event()
	}
}

// logFault keeps f in the ring of the last faultLogMax faults.
func (u *Unit) logFault(f *Fault) {
	if len(u.log) < faultLogMax {
		u.log = append(u.log, *f)
		return
	}
	u.log[u.logHead] = *f
	u.logHead = (u.logHead + 1) % faultLogMax
}

// ppf reports a pending primary fault: some record has F set.
func (u *Unit) ppf() bool {
	for _, r := range u.frcds {
		if r.hi&FRCD_F != 0 {
			return true
		}
	}
	return false
}

func (u *Unit) fstsValue() uint32 {
	v := u.fsts
	if u.ppf() {
		v |= FSTS_PPF
	}
	return v
}

// event raises a fault event: pending while masked, delivered otherwise.
func (u *Unit) event() {
	if u.fectl&FECTL_IM != 0 {
		u.fectl |= FECTL_IP
		return
	}
	u.deliver()
}

func (u *Unit) deliver() {
	u.stats.FaultInterrupts++
	if u.notify != nil {
		u.notify()
	}
}

// faultsMaybeCleared drops a pending fault event once software has
// serviced every record and the overflow.
func (u *Unit) faultsMaybeCleared() {
	if !u.ppf() && u.fsts&FSTS_PFO == 0 {
		u.fectl &^= FECTL_IP
	}
}
