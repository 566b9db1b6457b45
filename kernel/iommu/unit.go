package iommu

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/ether9/ether9/kernel"
)

// Options tune a unit. The zero value is a sensible default.
type Options struct {
	// Levels forces 3- or 4-level page tables; 0 takes the deepest the
	// unit supports.
	Levels int
	// NoLargePages keeps every mapping on 4 KiB leaves.
	NoLargePages bool
	// IOVALimit caps each domain's IOVA space (bytes); 0 means the whole
	// address width of the tables.
	IOVALimit uint64
	// Clock times register handshakes; nil means the wall clock.
	Clock kernel.Clock
	// Timeout bounds each register handshake; 0 means one second.
	Timeout time.Duration
	// Interrupts turns interrupt remapping on with translation: every
	// message a covered device sends must then name an entry (RemapMSI),
	// and compatibility-format messages, the platform's own included,
	// are blocked. It needs ECAP.IR and ECAP.QI, and moves every
	// invalidation to the queue.
	Interrupts bool
	// X2APIC says the processors' local APICs run in x2APIC mode (SDM
	// 11.12): remapping then runs in extended interrupt mode (IRTA.EIME,
	// VT-d 10.4.29), each entry naming a 32-bit x2APIC id. It needs
	// ECAP.EIM.
	X2APIC bool
	// TakeOver says no kernel beneath us drives the unit, only firmware
	// before us (the metal platform): Enable turns off an invalidation
	// queue or interrupt remapping left on, as some server firmware
	// leaves them, and starts its own. Without it a unit with its queue
	// on belongs to another owner (Linux with intremap on), and Enable
	// refuses it.
	TakeOver bool
}

// Unit is one VT-d DMA-remapping unit and the tables this package owns for
// it: the root table, a context table per bus and a domain per device.
// Its methods and those of its domains are safe for concurrent use.
type Unit struct {
	mu      sync.Mutex
	regs    kernel.Regs
	caps    Caps
	clock   kernel.Clock
	timeout time.Duration
	levels  int
	large   bool
	limit   uint64 // end of every domain's IOVA space

	tm      tableMem
	sync    syncer // the memory's side of the domains' syncs
	root    kernel.Region
	ctx     [256]*kernel.Region // context table per bus
	domains map[uint16]*Domain
	nextDID int
	enabled bool

	inv      invalidator
	qi       *queue   // nil: register-based invalidation
	irt      *irTable // nil: interrupts not remapped
	remapIRQ bool     // Options.Interrupts
	takeOver bool     // Options.TakeOver
	tookOver []string // what Enable turned off that firmware had left on
	x2apic   bool     // entries name 32-bit x2APIC ids (IRTA.EIME)
	faultLog []Fault
	stats    Stats
}

// DefaultBatch is the deferred-mode batch: unmaps per IOTLB invalidation.
const DefaultBatch = 256

const defaultTimeout = time.Second

// New takes over the unit behind regs. It reads VER, CAP and ECAP, picks
// the table depth and allocates the root table; translation stays off
// until Enable.
func New(regs kernel.Regs, mem kernel.Memory, opt Options) (*Unit, error) {
	c := ReadCaps(regs)
	if err := c.check(); err != nil {
		return nil, fmt.Errorf("iommu: %w", err)
	}
	u := &Unit{
		regs:    regs,
		caps:    c,
		clock:   opt.Clock,
		timeout: opt.Timeout,
		large:   c.Large2M() && !opt.NoLargePages,
		tm:      tableMem{mem: mem, flush: !c.Coherent},
		sync:    newSyncer(mem),
		domains: make(map[uint16]*Domain),
		nextDID: 1, // domain 0 is what caching-mode hardware tags non-present entries with
	}
	u.inv = invalidator{u: u, mode: Strict, batch: DefaultBatch}
	u.takeOver = opt.TakeOver
	if opt.Interrupts {
		if !c.IR || !c.QI {
			return nil, fmt.Errorf("iommu: interrupt remapping asked for, the unit has IR %v and QI %v", c.IR, c.QI)
		}
		if opt.X2APIC && !c.EIM {
			return nil, fmt.Errorf("iommu: interrupt remapping for x2APIC processors asked for, the unit has no extended interrupt mode (ECAP.EIM)")
		}
		u.x2apic = opt.X2APIC
		u.remapIRQ = true
	}
	// Interrupt remapping needs the queue, and a unit of version 6 or
	// later has no other way to invalidate.
	if opt.Interrupts || !c.RegisterInvalidation() {
		q, err := newQueue(u)
		if err != nil {
			return nil, fmt.Errorf("iommu: %w", err)
		}
		u.qi = q
	}
	if u.clock == nil {
		u.clock = kernel.NewWallClock()
	}
	if u.timeout <= 0 {
		u.timeout = defaultTimeout
	}
	switch opt.Levels {
	case 0:
		u.levels = c.Levels()[0]
	case 3, 4:
		if c.SAGAW&(1<<(opt.Levels-2)) == 0 {
			return nil, fmt.Errorf("iommu: %d-level tables forced, SAGAW %#x lacks them", opt.Levels, c.SAGAW)
		}
		u.levels = opt.Levels
	default:
		return nil, fmt.Errorf("iommu: %d-level tables: only 3 and 4 exist", opt.Levels)
	}
	u.limit = 1 << levelShift(u.levels+1)
	if c.MGAW < 64 && u.limit > 1<<c.MGAW {
		u.limit = 1 << c.MGAW
	}
	if opt.IOVALimit != 0 {
		if opt.IOVALimit < 2*kernel.PageSize || opt.IOVALimit%kernel.PageSize != 0 {
			return nil, fmt.Errorf("iommu: IOVA limit %#x: %w", opt.IOVALimit, kernel.ErrUnaligned)
		}
		u.limit = min(u.limit, opt.IOVALimit)
	}
	root, err := u.tm.page()
	if err != nil {
		return nil, fmt.Errorf("iommu: root table: %w", err)
	}
	u.root = root
	return u, nil
}

// Caps returns the unit's decoded capabilities.
func (u *Unit) Caps() Caps { return u.caps }

// Levels returns the page-table depth of the unit's domains.
func (u *Unit) Levels() int { return u.levels }

// SourceID is the requester id VT-d indexes its tables with.
func SourceID(bus, dev, fn uint8) uint16 {
	return uint16(bus)<<8 | uint16(dev&0x1f)<<3 | uint16(fn&7)
}

// SourceString names a requester id as bus:dev.fn.
func SourceString(s uint16) string {
	return fmt.Sprintf("%02x:%02x.%x", s>>8, s>>3&0x1f, s&7)
}

// Domain returns the domain of the device with the given source id,
// creating it (a domain id, a page table, its context entry) on first use.
func (u *Unit) Domain(source uint16) (*Domain, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if d, ok := u.domains[source]; ok {
		return d, nil
	}
	if u.nextDID >= u.caps.Domains {
		return nil, fmt.Errorf("iommu: domain for %s: all %d domain ids in use", SourceString(source), u.caps.Domains)
	}
	pt, err := newPageTable(&u.tm, u.levels, u.large)
	if err != nil {
		return nil, fmt.Errorf("iommu: domain for %s: %w", SourceString(source), err)
	}
	bus := source >> 8
	ctx := u.ctx[bus]
	if ctx == nil {
		r, err := u.tm.page()
		if err != nil {
			_ = pt.release()
			return nil, fmt.Errorf("iommu: context table for bus %02x: %w", bus, err)
		}
		ctx = &r
		u.ctx[bus] = ctx
		// Root entry: high quadword stays zero; the low one makes it present.
		u.tm.put(u.root.Buf, int(bus)*rootEntrySz, uint64(r.Phys)&addrMask|entryPresent)
	}
	d := &Domain{
		u:      u,
		id:     uint16(u.nextDID),
		source: source,
		pt:     pt,
		iova:   newIOVASpace(kernel.PageSize, u.limit), // IOVA 0 is never handed out
	}
	aw := uint64(ctxAW48)
	if u.levels == 3 {
		aw = ctxAW39
	}
	// The high quadword first, so the unit never sees a present entry
	// with a stale width or domain id. Translation type 00: untranslated
	// requests go through the second-level table.
	off := int(source&0xff) * rootEntrySz
	u.tm.put(ctx.Buf, off+8, aw<<ctxAWShift|uint64(d.id)<<ctxDIDShift)
	u.tm.put(ctx.Buf, off, uint64(pt.root.mem.Phys)&addrMask|entryPresent)
	u.nextDID++
	u.domains[source] = d
	if u.enabled {
		if err := u.inv.newContext(); err != nil {
			return nil, fmt.Errorf("iommu: domain for %s: %w", SourceString(source), err)
		}
	}
	return d, nil
}

// gcmd issues one GCMD command: the persistent GSTS bits, with set added
// and clear removed, and waits until GSTS shows done(gsts).
func (u *Unit) gcmd(what string, set, clear uint32, done func(gsts uint32) bool) error {
	v := u.regs.Read32(regGSTS)&^gstsOneShot | set
	v &^= clear
	u.regs.Write32(regGCMD, v)
	return u.wait(what, func() bool { return done(u.regs.Read32(regGSTS)) })
}

// wait polls cond, backing off, until it holds or the timeout passes.
func (u *Unit) wait(what string, cond func() bool) error {
	start := u.clock.Now()
	pause := time.Microsecond
	for i := 0; ; i++ {
		if cond() {
			return nil
		}
		if u.clock.Now()-start > u.timeout {
			return fmt.Errorf("iommu: %s: no completion after %v", what, u.timeout)
		}
		if i >= 16 {
			u.clock.Sleep(pause)
			pause = min(2*pause, time.Millisecond)
		}
	}
}

// Enable points the unit at the root table, invalidates its context cache
// and IOTLB and turns translation on.
func (u *Unit) Enable() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.enabled {
		return nil
	}
	gsts := u.regs.Read32(regGSTS)
	if gsts&(gstsQIES|gstsIRES) != 0 && (u.qi == nil || !u.qi.started) {
		if !u.takeOver {
			return fmt.Errorf("iommu: queued invalidation or interrupt remapping is on (GSTS %#x): another owner holds the unit; boot with intel_iommu=off intremap=off", gsts)
		}
		if err := u.reclaim(gsts); err != nil {
			return err
		}
		gsts = u.regs.Read32(regGSTS)
	}
	if gsts&gstsTES != 0 {
		// Left on by firmware: take it down before the root pointer moves.
		if err := u.gcmd("translation disable", 0, gcmdTE, func(s uint32) bool { return s&gstsTES == 0 }); err != nil {
			return err
		}
	}
	u.pollFaults() // stale records from before we owned the unit
	u.regs.Write64(regRTADDR, uint64(u.root.Phys)&addrMask|rtaddrLegacy)
	if err := u.gcmd("set root table pointer", gcmdSRTP, 0, func(s uint32) bool { return s&gstsRTPS != 0 }); err != nil {
		return err
	}
	if u.qi != nil && !u.qi.started {
		if err := u.qi.start(); err != nil {
			return err
		}
	}
	if err := u.inv.contextGlobal(); err != nil {
		return err
	}
	if err := u.inv.iotlb(invGlobal, 0, 0, 0); err != nil {
		return err
	}
	if u.remapIRQ && gsts&gstsIRES == 0 && (u.irt == nil || !u.irt.stopped) {
		if err := u.startInterrupts(); err != nil {
			return err
		}
	}
	if err := u.gcmd("translation enable", gcmdTE, 0, func(s uint32) bool { return s&gstsTES != 0 }); err != nil {
		return err
	}
	if err := u.openProtectedMemory(); err != nil {
		return err
	}
	u.enabled = true
	return nil
}

// PMEN's bits (10.4.16).
const (
	pmenEPM = 1 << 31 // enable protected memory
	pmenPRS = 1 << 0  // protected region status
)

// openProtectedMemory turns off the protected memory regions firmware
// with pre-boot DMA protection leaves enabled, now that the page tables
// guard memory: they block the devices' DMA into them, translated or not
// (10.4.16), so a buffer the driver maps there would never be reached.
// Turned off after translation is on, so no moment is unguarded.
func (u *Unit) openProtectedMemory() error {
	if !u.caps.PMR || u.regs.Read32(regPMEN)&pmenEPM == 0 {
		return nil
	}
	u.regs.Write32(regPMEN, 0)
	if err := u.wait("protected memory disable", func() bool { return u.regs.Read32(regPMEN)&pmenPRS == 0 }); err != nil {
		return err
	}
	u.tookOver = append(u.tookOver, "its protected memory regions")
	return nil
}

// reclaim turns off what firmware left on: interrupt remapping first,
// then the invalidation queue once the unit has fetched every
// descriptor up to the tail (IQH = IQT), as software must before
// clearing QIE (VT-d 10.4.4); a queue stopped on a bad descriptor
// (FSTS.IQE) never drains and is turned off as it is, its error cleared
// so that it is not taken for one of ours.
func (u *Unit) reclaim(gsts uint32) error {
	if gsts&gstsIRES != 0 {
		if err := u.gcmd("interrupt remapping disable (firmware's)", 0, gcmdIRE|gcmdCFI, func(s uint32) bool { return s&gstsIRES == 0 }); err != nil {
			return err
		}
		u.tookOver = append(u.tookOver, "interrupt remapping")
	}
	if gsts&gstsQIES != 0 {
		err := u.wait("firmware's invalidation queue to drain", func() bool {
			return u.regs.Read64(regIQH)&iqOffsetMask == u.regs.Read64(regIQT)&iqOffsetMask || u.regs.Read32(regFSTS)&fstsIQE != 0
		})
		if err != nil {
			return err
		}
		if err := u.gcmd("queued invalidation disable (firmware's)", 0, gcmdQIE, func(s uint32) bool { return s&gstsQIES == 0 }); err != nil {
			return err
		}
		u.regs.Write32(regFSTS, fstsIQE)
		u.tookOver = append(u.tookOver, "the invalidation queue")
	}
	return nil
}

// TookOver says what Enable found left on by firmware and turned off
// before starting its own (Options.TakeOver); "" when nothing.
func (u *Unit) TookOver() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return strings.Join(u.tookOver, " and ")
}

// Disable completes deferred unmaps and turns translation off: from then on
// devices reach physical memory untranslated.
func (u *Unit) Disable() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if err := u.inv.flush(); err != nil {
		return err
	}
	if err := u.gcmd("translation disable", 0, gcmdTE, func(s uint32) bool { return s&gstsTES == 0 }); err != nil {
		return err
	}
	u.enabled = false
	return nil
}

// Enabled reports whether translation is on.
func (u *Unit) Enabled() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.enabled
}
