// Package vtd is a model of an Intel VT-d remapping unit, written from the
// VT-d specification, not from any driver, so that a model and a driver
// can disagree: the register set, legacy-mode root and context tables,
// second-level paging (3 or 4 levels, 2 MiB and 1 GiB leaves), an IOTLB
// and a context cache that keep translations until software invalidates
// them, queued invalidation, interrupt remapping (the interrupt
// remapping table, source validation, and an interrupt entry cache kept
// until software invalidates it), and the primary fault recording
// registers, which record DMA and interrupt-remapping faults alike.
//
// The model reads the tables the driver wrote through a Memory, at the time
// of a cache miss, so a table write that was never flushed or a cached
// translation or interrupt entry that was never invalidated shows up
// exactly as it would on hardware.
package vtd

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ether9/ether9/kernel"
)

// Memory is how the unit reads its tables: the device-side view of
// physical memory, without any translation.
type Memory interface {
	DeviceRead(p kernel.PhysAddr, b []byte) error
}

// Config describes the unit's hardware. The zero value is a 48-bit unit
// without page-selective invalidation, large pages, coherency or caches;
// QEMU() gives QEMU's intel-iommu defaults.
type Config struct {
	AddrWidth int   // 39 (3-level tables) or 48 (3- and 4-level); 0 means 48
	PSI       bool  // page-selective IOTLB invalidation (CAP.PSI)
	SLLPS     uint8 // second-level large pages: bit 0 2 MiB, bit 1 1 GiB
	Coherent  bool  // ECAP.C: table walks snoop the CPU caches
	IOTLB     bool  // cache translations, context and interrupt remapping entries until invalidated
	NFR       int   // fault recording registers; 0 means 1
	// CachingMode sets CAP.CM: with IOTLB on, the unit also caches
	// not-present root, context and leaf entries, so software must
	// invalidate after making an entry present, as under QEMU's
	// caching-mode=on.
	CachingMode bool
	// Version is VER: major << 4 | minor; 0 means 0x10, QEMU's 1.0.
	// From major version 6 the unit has no register-based invalidation
	// (VT-d 3.3, 6.5): it ignores the CCMD and IOTLB registers, so a
	// driver must invalidate through the queue.
	Version uint8
	// PMR sets CAP.PLMR and CAP.PHMR: the unit has protected memory
	// regions, which firmware may leave enabled (pre-boot DMA
	// protection) and which block DMA to them, translated or not, until
	// software clears PMEN.EPM (10.4.16-10.4.20).
	PMR bool
	// EIM sets ECAP.EIM: the unit can remap interrupts in extended
	// (x2APIC) mode, IRTA.EIME, whose entries name 32-bit destinations.
	// Without it EIME is reserved and reads as zero (10.4.29), as under
	// QEMU's intel-iommu with eim=off.
	EIM bool
	// PagingCache, with IOTLB on, also caches non-leaf second-level
	// entries (paging-structure caches), as hardware does and QEMU does
	// not. A page-selective invalidation with IVA.IH set keeps them, so a
	// driver that frees or replaces a page table must invalidate with IH
	// clear.
	PagingCache bool

	// InvalidationCost is how long each register-based context-cache or
	// IOTLB invalidation busy-waits, as hardware takes time to drain and
	// flush. 0 means 1 µs; negative means none.
	InvalidationCost time.Duration
}

// QEMU returns the configuration of QEMU's intel-iommu with its defaults
// (aw-bits=48): CAP 0x00d2008c222f0606, ECAP 0xf00f4a.
func QEMU() Config {
	return Config{AddrWidth: 48, PSI: true, SLLPS: SLLPS_2M | SLLPS_1G, IOTLB: true, NFR: 1}
}

// Caps returns the CAP and ECAP register values cfg describes.
func (cfg Config) Caps() (capReg, ecapReg uint64, err error) {
	aw := cfg.AddrWidth
	if aw == 0 {
		aw = 48
	}
	var sagaw uint64
	switch aw {
	case 39:
		sagaw = SAGAW_39
	case 48:
		sagaw = SAGAW_39 | SAGAW_48
	default:
		return 0, 0, fmt.Errorf("vtd: address width %d unsupported (39 or 48)", cfg.AddrWidth)
	}
	nfr := cfg.NFR
	if nfr == 0 {
		nfr = 1
	}
	if nfr < 1 || nfr > 256 {
		return 0, 0, fmt.Errorf("vtd: %d fault recording registers, want 1..256", cfg.NFR)
	}
	if cfg.SLLPS&^(SLLPS_2M|SLLPS_1G) != 0 {
		return 0, 0, fmt.Errorf("vtd: SLLPS %#x: only 2 MiB and 1 GiB pages are modelled", cfg.SLLPS)
	}
	capReg = 6<<CAP_ND_SHIFT | // 16-bit domain ids
		sagaw<<CAP_SAGAW_SHIFT |
		uint64(aw-1)<<CAP_MGAW_SHIFT |
		fro<<CAP_FRO_SHIFT |
		uint64(cfg.SLLPS)<<CAP_SLLPS_SHIFT |
		uint64(nfr-1)<<CAP_NFR_SHIFT |
		maxAM<<CAP_MAMV_SHIFT |
		CAP_DWD | CAP_DRD
	if cfg.PSI {
		capReg |= CAP_PSI
	}
	if cfg.CachingMode {
		capReg |= CAP_CM
	}
	if cfg.PMR {
		capReg |= CAP_PLMR | CAP_PHMR
	}
	ecapReg = ECAP_QI | ECAP_IR | ECAP_PT | iro<<ECAP_IRO_SHIFT | 0xf<<ECAP_MHMV_SHIFT
	if cfg.Coherent {
		ecapReg |= ECAP_C
	}
	if cfg.EIM {
		ecapReg |= ECAP_EIM
	}
	return capReg, ecapReg, nil
}

// Stats counts what the unit did.
type Stats struct {
	Walks             uint64 // second-level table walks
	IOTLBHits         uint64
	IOTLBMisses       uint64
	ContextHits       uint64
	ContextMisses     uint64
	IOTLBGlobal       uint64 // IOTLB invalidations by actual granularity
	IOTLBDomain       uint64
	IOTLBPage         uint64
	IOTLBRejected     uint64 // invalid requests (IAIG=0)
	ContextGlobal     uint64 // context-cache invalidations by actual granularity
	ContextDomain     uint64
	ContextDevice     uint64
	IgnoredInvals     uint64 // register-based invalidations while queued invalidation is on, or on a unit without them
	ProtectedBlocked  uint64 // requests blocked by a protected memory region
	Faults            uint64 // every fault, translation or interrupt remapping
	FaultsRecorded    uint64 // written to a fault recording register
	FaultsDropped     uint64 // lost to an overflow (FSTS.PFO)
	FaultInterrupts   uint64 // fault events delivered (FECTL.IM clear)
	Untranslated      uint64 // requests passed through with translation off
	CachedEntries     int    // IOTLB entries held now
	CachedContexts    int    // context-cache entries held now
	CachedTables      int    // paging-structure cache entries held now
	PagingHits        uint64 // walks started below the top from the paging-structure cache
	IOTLBEvictions    uint64 // capacity evictions (never hide a missing invalidation's first effect)
	RootPointerLoads  uint64
	QueuedDescriptors uint64 // invalidation queue descriptors carried out
	QueueWaits        uint64 // invalidation wait descriptors
	QueueErrors       uint64 // invalid descriptors or fetch failures (FSTS.IQE)

	IRTableLoads       uint64 // interrupt remapping table pointers latched (SIRTP)
	InterruptsRemapped uint64 // requests remapped through an IRTE
	InterruptsPassed   uint64 // requests passed unchanged: remapping off, or compatibility format under CFIS
	InterruptsBlocked  uint64 // requests blocked, their fault recorded or not
	IECHits            uint64 // interrupt entry cache
	IECMisses          uint64
	IECGlobal          uint64 // interrupt entry cache invalidations by granularity
	IECIndex           uint64
	CachedIRTEs        int // interrupt entry cache entries held now
}

// ErrQueuedInvalidation reports a register-based invalidation the unit
// ignored because queued invalidation is enabled.
var ErrQueuedInvalidation = errors.New("vtd: register-based invalidation while queued invalidation is enabled")

type frcd struct{ lo, hi uint64 }

// Unit is one remapping hardware unit. It is a kernel.Regs: every access is
// one register read or write, serialized with translation.
type Unit struct {
	mu     sync.Mutex
	cfg    Config
	mem    Memory
	cap    uint64
	ecap   uint64
	aw     uint // host and guest address width
	cost   time.Duration
	notify func()
	qmem   QueueMemory

	gsts    uint32
	rtaddr  uint64 // as written
	rta     uint64 // latched by SRTP
	ccmd    uint64
	iva     uint64
	iotlb   uint64
	fsts    uint32 // PFO, IQE, ICE, ITE, FRI; PPF is computed
	fectl   uint32
	fedata  uint32
	feaddr  uint32
	feuaddr uint32
	aflog   uint64
	pmen    uint32
	plm     [2]uint32 // PLMBASE, PLMLIMIT
	phm     [2]uint64 // PHMBASE, PHMLIMIT
	iqh     uint64
	iqt     uint64
	iqa     uint64
	ics     uint32
	iectl   uint32
	iedata  uint32
	ieaddr  uint32
	ieuaddr uint32
	irta    uint64 // as written
	irt     uint64 // latched by SIRTP
	frcds   []frcd
	nextRec int

	ctxCache map[uint16]context
	tlb      map[tlbKey]tlbEntry
	pscache  map[tlbKey]tlbEntry // non-leaf entries: next table and permissions so far
	iec      map[uint16]irte     // interrupt entry cache, by interrupt index
	log      []Fault             // a ring once full; logHead is the oldest
	logHead  int
	stats    Stats
}

// New returns a unit in its reset state: translation off, fault events
// masked.
func New(cfg Config, mem Memory) (*Unit, error) {
	if mem == nil {
		return nil, errors.New("vtd: no memory to walk tables in")
	}
	capReg, ecapReg, err := cfg.Caps()
	if err != nil {
		return nil, err
	}
	u := &Unit{
		cfg:      cfg,
		mem:      mem,
		cap:      capReg,
		ecap:     ecapReg,
		aw:       uint(capReg>>CAP_MGAW_SHIFT&0x3f) + 1,
		cost:     cfg.InvalidationCost,
		fectl:    FECTL_IM,
		frcds:    make([]frcd, capReg>>CAP_NFR_SHIFT&0xff+1),
		ctxCache: make(map[uint16]context),
		tlb:      make(map[tlbKey]tlbEntry),
		pscache:  make(map[tlbKey]tlbEntry),
		iec:      make(map[uint16]irte),
	}
	if u.cost == 0 {
		u.cost = time.Microsecond
	}
	return u, nil
}

// Config returns the configuration the unit was built with.
func (u *Unit) Config() Config { return u.cfg }

// SetFaultNotify sets the function called when the unit delivers a fault
// event interrupt (a fault recorded while FECTL.IM is clear). It is called
// with the unit's lock held and must not touch the unit.
func (u *Unit) SetFaultNotify(f func()) {
	u.mu.Lock()
	u.notify = f
	u.mu.Unlock()
}

// Stats returns the unit's counters.
func (u *Unit) Stats() Stats {
	u.mu.Lock()
	defer u.mu.Unlock()
	s := u.stats
	s.CachedEntries = len(u.tlb)
	s.CachedContexts = len(u.ctxCache)
	s.CachedTables = len(u.pscache)
	s.CachedIRTEs = len(u.iec)
	return s
}

// FaultLog returns every translation fault since the last ClearFaultLog,
// recorded in registers or not (at most the last 4096).
func (u *Unit) FaultLog() []Fault {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := make([]Fault, 0, len(u.log))
	out = append(out, u.log[u.logHead:]...)
	return append(out, u.log[:u.logHead]...)
}

// ClearFaultLog empties the log FaultLog returns; the registers keep theirs.
func (u *Unit) ClearFaultLog() {
	u.mu.Lock()
	u.log, u.logHead = u.log[:0], 0
	u.mu.Unlock()
}

// spin busy-waits for the configured invalidation cost.
func (u *Unit) spin() {
	if u.cost <= 0 {
		return
	}
	for start := time.Now(); time.Since(start) < u.cost; {
	}
}
