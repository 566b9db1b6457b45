package vtd

// Register offsets of the remapping hardware unit (VT-d specification,
// chapter 10). The IOTLB registers sit at ECAP.IRO and the fault recording
// registers at CAP.FRO; both offsets are fixed here as in QEMU's model.
const (
	VER     = 0x00 // version, 32-bit
	CAP     = 0x08 // capabilities, 64-bit
	ECAP    = 0x10 // extended capabilities, 64-bit
	GCMD    = 0x18 // global command, 32-bit, write-only
	GSTS    = 0x1C // global status, 32-bit
	RTADDR  = 0x20 // root table address, 64-bit
	CCMD    = 0x28 // context command, 64-bit
	FSTS    = 0x34 // fault status, 32-bit
	FECTL   = 0x38 // fault event control, 32-bit
	FEDATA  = 0x3C // fault event data
	FEADDR  = 0x40 // fault event address
	FEUADDR = 0x44 // fault event upper address
	AFLOG   = 0x58 // advanced fault log, 64-bit
	PMEN    = 0x64 // protected memory enable
	PLMBASE = 0x68 // protected low-memory base, 32-bit
	PLMLIM  = 0x6C // protected low-memory limit, 32-bit
	PHMBASE = 0x70 // protected high-memory base, 64-bit
	PHMLIM  = 0x78 // protected high-memory limit, 64-bit
	IQH     = 0x80 // invalidation queue head, 64-bit
	IQT     = 0x88 // invalidation queue tail, 64-bit
	IQA     = 0x90 // invalidation queue address, 64-bit
	ICS     = 0x9C // invalidation completion status
	IECTL   = 0xA0 // invalidation event control
	IEDATA  = 0xA4
	IEADDR  = 0xA8
	IEUADDR = 0xAC
	IRTA    = 0xB8 // interrupt remapping table address, 64-bit

	IVA   = 0xF0 // invalidate address (IRO*16), 64-bit
	IOTLB = 0xF8 // IOTLB invalidate (IRO*16+8), 64-bit
	FRCD  = 0x220

	iro = IVA / 16
	fro = FRCD / 16
)

// GCMD and GSTS bits. Each GCMD bit has its status twin at the same
// position in GSTS.
const (
	GCMD_TE    = 1 << 31 // translation enable
	GCMD_SRTP  = 1 << 30 // set root table pointer
	GCMD_SFL   = 1 << 29 // set fault log
	GCMD_EAFL  = 1 << 28 // enable advanced fault logging
	GCMD_WBF   = 1 << 27 // write buffer flush
	GCMD_QIE   = 1 << 26 // queued invalidation enable
	GCMD_IRE   = 1 << 25 // interrupt remapping enable
	GCMD_SIRTP = 1 << 24 // set interrupt remap table pointer
	GCMD_CFI   = 1 << 23 // compatibility format interrupt

	GSTS_TES   = 1 << 31
	GSTS_RTPS  = 1 << 30
	GSTS_FLS   = 1 << 29
	GSTS_AFLS  = 1 << 28
	GSTS_WBFS  = 1 << 27
	GSTS_QIES  = 1 << 26
	GSTS_IRES  = 1 << 25
	GSTS_IRTPS = 1 << 24
	GSTS_CFIS  = 1 << 23
)

// CCMD fields.
const (
	CCMD_ICC         = 1 << 63
	CCMD_CIRG_SHIFT  = 61
	CCMD_CAIG_SHIFT  = 59
	CCMD_FM_SHIFT    = 32
	CCMD_SID_SHIFT   = 16
	CCMD_GLOBAL      = 1
	CCMD_DOMAIN      = 2
	CCMD_DEVICE      = 3
	ccmdGranularMask = 3
)

// IOTLB register and IVA fields.
const (
	IOTLB_IVT        = 1 << 63
	IOTLB_IIRG_SHIFT = 60
	IOTLB_IAIG_SHIFT = 57
	IOTLB_DR         = 1 << 49
	IOTLB_DW         = 1 << 48
	IOTLB_DID_SHIFT  = 32
	IOTLB_GLOBAL     = 1
	IOTLB_DOMAIN     = 2
	IOTLB_PAGE       = 3

	IVA_IH      = 1 << 6
	IVA_AM_MASK = 0x3f
)

// FSTS and FECTL bits.
const (
	FSTS_PFO       = 1 << 0
	FSTS_PPF       = 1 << 1
	FSTS_IQE       = 1 << 4
	FSTS_ICE       = 1 << 5
	FSTS_ITE       = 1 << 6
	FSTS_FRI_SHIFT = 8

	FECTL_IM = 1 << 31
	FECTL_IP = 1 << 30
)

// Fault recording register, upper quadword; and the lower quadword's
// fault info for an interrupt-remapping fault (10.4.14).
const (
	FRCD_F        = 1 << 63
	FRCD_T        = 1 << 62 // 1: read request, 0: write request
	FRCD_FR_SHIFT = 32

	FRCD_FI_IR_SHIFT = 48 // interrupt faults: the interrupt index, 63:48
)

// IRTA fields (10.4.29).
const (
	IRTA_EIME   = 1 << 11 // extended interrupt mode: 32-bit x2APIC destinations
	IRTA_S_MASK = 0xf     // the table holds 2^(S+1) entries
)

// An interrupt request's address (5.1.2): a DWORD write to 0xFEEx_xxxx.
// In remappable format bits 19:5 hold handle[14:0] and bit 2 handle[15];
// with SHV set data bits 15:0 hold a subhandle added to the handle.
const (
	MSI_ADDR_WINDOW       = 0xfee0_0000
	MSI_ADDR_WINDOW_MASK  = 0xfff0_0000
	MSI_ADDR_FORMAT       = 1 << 4 // interrupt format: 1 remappable, 0 compatibility
	MSI_ADDR_SHV          = 1 << 3 // subhandle valid
	MSI_ADDR_HANDLE15     = 1 << 2
	MSI_ADDR_HANDLE_SHIFT = 5

	// Compatibility format, as the unit hands a remapped interrupt on.
	MSI_ADDR_DM        = 1 << 2 // destination mode: 1 logical
	MSI_ADDR_RH        = 1 << 3 // redirection hint
	MSI_ADDR_DST_SHIFT = 12
	MSI_DATA_DLM_SHIFT = 8
	MSI_DATA_TM        = 1 << 15 // trigger mode: 1 level
)

// Interrupt remapping table entry for remapped interrupts (9.10), lower
// and upper quadword.
const (
	IRTE_P         = 1 << 0
	IRTE_FPD       = 1 << 1  // fault processing disable
	IRTE_DM        = 1 << 2  // destination mode: 1 logical
	IRTE_RH        = 1 << 3  // redirection hint
	IRTE_TM        = 1 << 4  // trigger mode: 1 level
	IRTE_DLM_SHIFT = 5       // delivery mode, 3 bits
	IRTE_IM        = 1 << 15 // IRTE mode: 1 posted (not supported: ECAP.PI clear)
	IRTE_V_SHIFT   = 16      // vector, 8 bits
	IRTE_DST_SHIFT = 32      // destination: x2APIC id, or xAPIC id in 47:40

	IRTE_SID_SHIFT = 0 // upper quadword: source id
	IRTE_SQ_SHIFT  = 16
	IRTE_SVT_SHIFT = 18

	SVT_NONE  = 0 // no source validation
	SVT_SID   = 1 // requester id under the SQ mask
	SVT_BUS   = 2 // bus number in SID[15:8]..SID[7:0]
	SQ_ALL    = 0 // compare every requester id bit
	SQ_IGN2   = 1 // ignore function bit 2
	SQ_IGN21  = 2 // ignore function bits 2:1
	SQ_IGN210 = 3 // ignore the function number
)

// CAP fields.
const (
	CAP_ND_SHIFT    = 0
	CAP_CM          = 1 << 7
	CAP_PLMR        = 1 << 5 // protected low-memory region
	CAP_PHMR        = 1 << 6 // protected high-memory region
	PMEN_EPM        = 1 << 31
	PMEN_PRS        = 1 << 0
	CAP_SAGAW_SHIFT = 8
	CAP_MGAW_SHIFT  = 16
	CAP_FRO_SHIFT   = 24
	CAP_SLLPS_SHIFT = 34
	CAP_PSI         = 1 << 39
	CAP_NFR_SHIFT   = 40
	CAP_MAMV_SHIFT  = 48
	CAP_DWD         = 1 << 54
	CAP_DRD         = 1 << 55

	SAGAW_39 = 1 << 1 // 3-level tables
	SAGAW_48 = 1 << 2 // 4-level tables

	SLLPS_2M = 1 << 0
	SLLPS_1G = 1 << 1
)

// ECAP fields.
const (
	ECAP_C          = 1 << 0
	ECAP_QI         = 1 << 1
	ECAP_DT         = 1 << 2
	ECAP_IR         = 1 << 3
	ECAP_EIM        = 1 << 4 // extended interrupt mode (IRTA.EIME)
	ECAP_PT         = 1 << 6
	ECAP_IRO_SHIFT  = 8
	ECAP_MHMV_SHIFT = 20
)

// Table entry bits (legacy mode root and context entries, second-level
// paging entries).
const (
	entryPresent = 1 << 0

	ctxFPD      = 1 << 1 // fault processing disable
	ctxTTShift  = 2
	ctxTTMask   = 3
	ctxTTSL     = 0 // untranslated requests through second-level tables
	ctxTTDevTLB = 1 // as 0, plus device-TLB (needs ECAP.DT)
	ctxTTPass   = 2 // pass-through (needs ECAP.PT)
	ctxAWMask   = 7
	ctxDIDShift = 8

	slR  = 1 << 0
	slW  = 1 << 1
	slPS = 1 << 7

	addrMask = 0x000f_ffff_ffff_f000 // bits 51:12
)

// maxAM is CAP.MAMV: the largest page-selective invalidation mask (2^18
// pages, as QEMU reports).
const maxAM = 18
