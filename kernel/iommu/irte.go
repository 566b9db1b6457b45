package iommu

import (
	"errors"
	"fmt"
	"math/bits"
	"sync"

	"github.com/ether9/ether9/kernel"
)

// Interrupt remapping (VT-d specification chapter 5). With it on, a
// device's write to the interrupt window names an entry of the unit's
// interrupt remapping table instead of a vector and a processor, and the
// unit delivers only what the entry says, only for the requester the
// entry names. Without it, a device that may write anywhere in its DMA
// domain can still raise any vector on any processor: the page tables
// guard memory, not the interrupt window, which DMA remapping never
// translates (3.15).

// Interrupt remapping registers and bits (10.4.4, 10.4.29).
const (
	regIRTA    = 0xb8
	irtaEIME   = 1 << 11 // extended interrupt mode: 32-bit destinations
	irtaSize   = 7       // S: 2^(S+1) = 256 entries, one page
	irtEntries = 2 << irtaSize

	gcmdSIRTP = 1 << 24 // set interrupt remap table pointer
	gcmdIRE   = 1 << 25 // interrupt remapping enable
	gstsIRES  = 1 << 25
	gcmdCFI   = 1 << 23 // compatibility format interrupts pass; GSTS.CFIS the same bit
)

// IRTE fields for remapped interrupts (9.10).
const (
	irteP        = 1 << 0
	irteDM       = 1 << 2 // logical destination
	irteTM       = 1 << 4 // level-triggered
	irteDLMShift = 5
	irteVecShift = 16
	irteDstXAPIC = 40      // xAPIC mode (IRTA.EIME=0): the APIC id in DST bits 15:8
	irteDstX2    = 32      // x2APIC mode (EIME=1): the x2APIC id in DST bits 31:0
	irteSVTSID   = 1 << 18 // high quadword: verify the requester id against SID
	// The remappable-format message (5.1.5.2): the handle's bits 14:0 in
	// address bits 19:5, bit 15 in address bit 2, bit 4 set; no subhandle
	// (SHV, bit 3, clear), so the data is not looked at.
	msiWindow       = 0xfee00000
	msiRemappable   = 1 << 4
	msiHandleShift  = 5
	msiHandle15     = 1 << 2
	msiCompatDMBit  = 1 << 2 // compatibility format: destination mode
	msiCompatDstSh  = 12     // compatibility format: APIC id in bits 19:12
	msiDataTMBit    = 1 << 15
	msiDataDLMShift = 8
)

// irTable is a unit's interrupt remapping table. It runs under the unit's
// lock.
type irTable struct {
	mem     kernel.Region
	used    [irtEntries / 64]uint64
	stopped bool // StopInterrupts: remapping stays off
}

// startInterrupts points the unit at a fresh table, invalidates the
// interrupt entry cache (required after SIRTP, 6.5.2.7) and turns
// remapping on. Compatibility-format interrupts stay blocked (CFI clear):
// each platform interrupt must come through an entry too.
func (u *Unit) startInterrupts() error {
	if u.irt == nil {
		r, err := u.tm.page()
		if err != nil {
			return fmt.Errorf("iommu: interrupt remapping table: %w", err)
		}
		u.irt = &irTable{mem: r}
	}
	irta := uint64(u.irt.mem.Phys)&addrMask | irtaSize
	if u.x2apic {
		irta |= irtaEIME
	}
	u.regs.Write64(regIRTA, irta)
	if err := u.gcmd("set interrupt remap table pointer", gcmdSIRTP, 0, func(s uint32) bool { return s&gstsIRTPS != 0 }); err != nil {
		return err
	}
	if err := u.qi.iec(true, 0, 0); err != nil {
		return err
	}
	// CFI cleared too, should firmware have left it set.
	return u.gcmd("interrupt remapping enable", gcmdIRE, gcmdCFI, func(s uint32) bool { return s&(gstsIRES|gcmdCFI) == gstsIRES })
}

// StopInterrupts turns interrupt remapping off for good: messages in
// compatibility format reach the processor again, and RemapsInterrupts
// says no. It is for a platform that could not move one of its own
// interrupts onto an entry and would otherwise lose it. Entries still in
// use stay in the table, unused.
func (u *Unit) StopInterrupts() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if !u.remapping() {
		return nil
	}
	if err := u.gcmd("interrupt remapping disable", 0, gcmdIRE, func(s uint32) bool { return s&gstsIRES == 0 }); err != nil {
		return err
	}
	u.irt.stopped = true
	return nil
}

// RemapsInterrupts reports whether the unit remaps interrupts: every
// message a device it covers sends must then come from RemapMSI. It
// does from Enable until StopInterrupts, translation on or off.
func (u *Unit) RemapsInterrupts() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.remapping()
}

// remapping is RemapsInterrupts with the lock held.
func (u *Unit) remapping() bool { return u.irt != nil && !u.irt.stopped }

// Message is an interrupt message in compatibility format (Intel SDM
// vol. 3, 11.11): what a platform hands out for a vector.
type Message struct {
	Addr uint64
	Data uint32
}

// entry builds the IRTE that delivers m for requester source, its
// destination in x2APIC format when x2apic, or says why m is not a
// message the table can carry.
func (m Message) entry(source uint16, x2apic bool) ([2]uint64, error) {
	if m.Addr&^0xfffff != msiWindow || m.Addr&msiRemappable != 0 {
		return [2]uint64{}, fmt.Errorf("message address %#x is not a compatibility-format MSI", m.Addr)
	}
	lo := uint64(irteP) |
		uint64(m.Data&0xff)<<irteVecShift |
		uint64(m.Data>>msiDataDLMShift&7)<<irteDLMShift |
		(m.Addr>>msiCompatDstSh&0xff)<<dstShift(x2apic)
	if m.Addr&msiCompatDMBit != 0 {
		lo |= irteDM
	}
	if m.Data&msiDataTMBit != 0 {
		lo |= irteTM
	}
	return [2]uint64{lo, irteSVTSID | uint64(source)}, nil
}

// dstShift is where an entry's destination id starts in its low
// quadword (9.10).
func dstShift(x2apic bool) uint {
	if x2apic {
		return irteDstX2
	}
	return irteDstXAPIC
}

// handleMessage is the remappable-format message naming entry i.
func handleMessage(i uint16) Message {
	return Message{Addr: msiWindow | msiRemappable | uint64(i&0x7fff)<<msiHandleShift | uint64(i>>15)*msiHandle15}
}

// Remap gives the device with requester id source an entry that delivers
// m, and returns the message the device must send instead: it names the
// entry, and the unit delivers it only from source.
func (u *Unit) Remap(source uint16, m Message) (Message, uint16, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	e, err := m.entry(source, u.x2apic)
	if err != nil {
		return Message{}, 0, fmt.Errorf("iommu: remap %s: %w", SourceString(source), err)
	}
	if !u.remapping() {
		return Message{}, 0, fmt.Errorf("iommu: remap %s: interrupt remapping is off", SourceString(source))
	}
	i, ok := u.irt.take()
	if !ok {
		return Message{}, 0, fmt.Errorf("iommu: remap %s: all %d interrupt entries in use", SourceString(source), irtEntries)
	}
	// High quadword first: the unit may fetch the entry as soon as P is
	// set, and the entry was not present, so nothing cached needs to go.
	off := int(i) * 16
	u.tm.put(u.irt.mem.Buf, off+8, e[1])
	u.tm.put(u.irt.mem.Buf, off, e[0])
	u.stats.InterruptEntries++
	return handleMessage(i), i, nil
}

// Unremap clears entry i and invalidates it from the interrupt entry
// cache: from then on a message naming it is blocked and recorded as a
// fault.
func (u *Unit) Unremap(i uint16) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.irt == nil || int(i) >= irtEntries || !u.irt.inUse(i) {
		return fmt.Errorf("iommu: interrupt entry %d is not in use", i)
	}
	off := int(i) * 16
	u.tm.put(u.irt.mem.Buf, off, 0)
	u.tm.put(u.irt.mem.Buf, off+8, 0)
	if err := u.qi.iec(false, i, 0); err != nil {
		// It may still be cached: keep it taken rather than reuse it.
		return err
	}
	u.irt.give(i)
	u.stats.InterruptEntries--
	return nil
}

// Interrupt is one entry of a unit's interrupt remapping table in use,
// as the table holds it.
type Interrupt struct {
	Entry  uint16
	Source uint16 // the requester id allowed to send it
	Vector uint8
	Dest   uint32 // destination APIC id (x2APIC id in x2APIC mode)
}

func (i Interrupt) String() string {
	return fmt.Sprintf("entry %d %s vector %d apic %d", i.Entry, SourceString(i.Source), i.Vector, i.Dest)
}

// Interrupts lists the entries in use, read back from the table; none
// while the unit does not remap interrupts.
func (u *Unit) Interrupts() []Interrupt {
	u.mu.Lock()
	defer u.mu.Unlock()
	if !u.remapping() {
		return nil
	}
	var out []Interrupt
	for i := range uint16(irtEntries) {
		if !u.irt.inUse(i) {
			continue
		}
		lo, hi := get(u.irt.mem.Buf, int(i)*16), get(u.irt.mem.Buf, int(i)*16+8)
		dst := uint32(lo >> dstShift(u.x2apic))
		if !u.x2apic {
			dst &= 0xff
		}
		out = append(out, Interrupt{Entry: i, Source: uint16(hi), Vector: uint8(lo >> irteVecShift), Dest: dst})
	}
	return out
}

func (t *irTable) take() (uint16, bool) {
	for w, v := range t.used {
		if v != ^uint64(0) {
			b := bits.TrailingZeros64(^v)
			t.used[w] |= 1 << b
			return uint16(w*64 + b), true
		}
	}
	return 0, false
}

func (t *irTable) inUse(i uint16) bool { return t.used[i/64]&(1<<(i%64)) != 0 }
func (t *irTable) give(i uint16)       { t.used[i/64] &^= 1 << (i % 64) }

// RemapMSI wraps a platform vector for the device with requester id
// source: the device sends the message of an entry of the unit's table,
// the unit delivers the vector. Closing it clears the entry, then gives
// the vector back.
func (u *Unit) RemapMSI(source uint16, v kernel.MSI) (kernel.MSI, error) {
	m, i, err := u.Remap(source, Message{Addr: v.MSIAddress(), Data: uint32(v.MSIData())})
	if err != nil {
		return nil, err
	}
	return &RemappedMSI{MSI: v, u: u, index: i, msg: m}, nil
}

// RemappedMSI is a platform vector reached through an entry of a unit's
// interrupt remapping table: the device sends the entry's message.
type RemappedMSI struct {
	kernel.MSI
	u     *Unit
	index uint16
	msg   Message
	once  sync.Once
	err   error
}

func (r *RemappedMSI) MSIAddress() uint64 { return r.msg.Addr }
func (r *RemappedMSI) MSIData() uint16    { return uint16(r.msg.Data) }

// Entry is the interrupt remapping entry the device's message names.
func (r *RemappedMSI) Entry() uint16 { return r.index }

// Unwrap is the platform's vector, for what it counts.
func (r *RemappedMSI) Unwrap() kernel.MSI { return r.MSI }

func (r *RemappedMSI) String() string {
	return fmt.Sprintf("%v (remapped, entry %d)", r.MSI, r.index)
}

func (r *RemappedMSI) Close() error {
	r.once.Do(func() { r.err = errors.Join(r.u.Unremap(r.index), r.MSI.Close()) })
	return r.err
}
