package iommu

// Remapping unit registers (VT-d specification, "Register Descriptions").
const (
	regVER    = 0x00 // version, 32
	regCAP    = 0x08 // capability, 64
	regECAP   = 0x10 // extended capability, 64
	regGCMD   = 0x18 // global command, 32, write-only
	regGSTS   = 0x1c // global status, 32
	regRTADDR = 0x20 // root table address, 64
	regCCMD   = 0x28 // context command, 64
	regFSTS   = 0x34 // fault status, 32
	regPMEN   = 0x64 // protected memory enable, 32: EPM bit 31, PRS bit 0
	// The fault event: its control (FECTL.IM masks it) and the interrupt
	// message it sends, data to an address (VT-d spec 10.4.10-10.4.13).
	regFECTL   = 0x38
	regFEDATA  = 0x3c
	regFEADDR  = 0x40
	regFEUADDR = 0x44
)

// fectlIM masks the fault event; the unit resets with it set.
const fectlIM = 1 << 31

// GCMD command bits and the GSTS status bits that acknowledge them.
const (
	gcmdTE    = 1 << 31 // translation enable
	gcmdSRTP  = 1 << 30 // set root table pointer
	gcmdWBF   = 1 << 27 // write buffer flush
	gcmdQIE   = 1 << 26 // queued invalidation enable
	gstsTES   = 1 << 31
	gstsRTPS  = 1 << 30
	gstsFLS   = 1 << 29
	gstsWBFS  = 1 << 27
	gstsQIES  = 1 << 26
	gstsIRTPS = 1 << 24

	// gstsOneShot are status bits of one-shot commands (root table and
	// interrupt remapping table pointers, fault log, write buffer flush).
	// GCMD is write-only, so every write is built from GSTS with these
	// cleared: writing them back would re-issue the command.
	gstsOneShot = gstsRTPS | gstsFLS | gstsWBFS | gstsIRTPS
)

// CCMD: context-cache invalidation.
const (
	ccmdICC       = 1 << 63
	ccmdCIRGShift = 61
	ccmdCAIGShift = 59
	ccmdGlobal    = 1 << ccmdCIRGShift
	ccmdGranMask  = 3
)

// IOTLB invalidate register (at ECAP.IRO*16+8) and invalidate address
// register (at ECAP.IRO*16).
const (
	iotlbIVT       = 1 << 63
	iotlbIIRGShift = 60
	iotlbIAIGShift = 57
	iotlbDR        = 1 << 49 // drain reads
	iotlbDW        = 1 << 48 // drain writes
	iotlbDIDShift  = 32
	iotlbGranMask  = 3
)

// FSTS bits.
const (
	fstsPFO      = 1 << 0 // primary fault overflow, RW1C
	fstsPPF      = 1 << 1 // primary pending fault, read-only summary of the F bits
	fstsFRIShift = 8
)

// Fault recording register (128 bits at CAP.FRO*16 + i*16). The low
// quadword holds the faulting page address; the high quadword holds the
// source id (bits 15:0), fault reason (bits 39:32), type (bit 62, 1 = read)
// and F (bit 63, RW1C).
const (
	frcdSize        = 16
	frcdReasonShift = 32
	frcdTypeRead    = 1 << 62
	frcdF           = 1 << 63
)

// RTADDR.TTM (bits 11:10) selects the table format; 00 is legacy mode.
const rtaddrLegacy = 0

// Table entries.
const (
	entryPresent = 1 << 0 // root and context entries

	pteRead  = 1 << 0
	pteWrite = 1 << 1
	pteLarge = 1 << 7 // PS: this level-2 (or level-3) entry is a leaf

	// addrMask keeps bits 51:12 of an entry: the address bits VT-d
	// defines for every supported host address width.
	addrMask = 0x000f_ffff_ffff_f000

	ctxAWShift  = 0 // high quadword: address width
	ctxDIDShift = 8 // high quadword: domain id
	ctxAW39     = 1 // 3-level table
	ctxAW48     = 2 // 4-level table
)

const (
	tableEntries = 512
	entrySize    = 8
	rootEntrySz  = 16
	pageShift    = 12
	largeShift   = 21
	largeSize    = 1 << largeShift
	levelStride  = 9
)
