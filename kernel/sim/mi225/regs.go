package mi225

import "github.com/ether9/ether9/kernel/sim/nicmodel"

// Register offsets in BAR0, from the I225 datasheet's register summary.
const (
	CTRL     = 0x00000
	STATUS   = 0x00008
	EECD     = 0x00010
	CTRL_EXT = 0x00018
	MDIC     = 0x00020
	VET      = 0x00038
	ICR      = 0x01500
	ICS      = 0x01504
	IMS      = 0x01508
	IMC      = 0x0150c
	IAM      = 0x01510
	GPIE     = 0x01514
	EICS     = 0x01520
	EIMS     = 0x01524
	EIMC     = 0x01528
	EIAC     = 0x0152c
	EIAM     = 0x01530
	EICR     = 0x01580
	EITR0    = 0x01680 // + 4n, n < 5
	IVAR0    = 0x01700 // + 4n, n < 2: queues 2n and 2n+1
	IVARMisc = 0x01740
	RCTL     = 0x00100
	TCTL     = 0x00400
	TIPG     = 0x00410
	RXCSUM   = 0x05000
	RLPML    = 0x05004
	RFCTL    = 0x05008
	MTA      = 0x05200 // 128 registers
	RAL0     = 0x05400 // + 8n, n < 16
	RAH0     = 0x05404
	VFTA     = 0x05600 // 128 registers
	MRQC     = 0x05818
	RETA     = 0x05c00 // 32 registers, four 8-bit entries each
	RSSRK    = 0x05c80 // 10 registers
	EEC      = 0x12010 // the datasheet's name for EECD; both offsets reach it
	EERD     = 0x12014

	// Receive queue n at 0xC000 + 0x40*n, transmit queue n at 0xE000 + 0x40*n.
	RDBAL  = 0x0c000
	RDBAH  = 0x0c004
	RDLEN  = 0x0c008
	SRRCTL = 0x0c00c
	RDH    = 0x0c010
	RDT    = 0x0c018
	RXDCTL = 0x0c028
	RQDPC  = 0x0c030
	TDBAL  = 0x0e000
	TDBAH  = 0x0e004
	TDLEN  = 0x0e008
	TDH    = 0x0e010
	TDT    = 0x0e018
	TXDCTL = 0x0e028

	QueueStride = 0x40
	Queues      = 4
	mmioSize    = 1 << 20 // BAR0
	regFileSize = 0x13000 // registers kept in the flat file (EERD is the highest)
)

// Statistics (8.19): clear on read. The family's common ones are
// nicmodel's (the I225 has no TSCTFC); these are the I225's own.
const (
	RERC    = 0x0402c
	HTDPMC  = 0x0403c
	statsLo = nicmodel.CRCERRS
	statsHi = 0x04140
)

// CTRL bits.
const (
	CtrlFD       = 1 << 0
	CtrlGIOMDis  = 1 << 2
	CtrlSLU      = 1 << 6
	CtrlFrcSpd   = 1 << 11
	CtrlFrcDpx   = 1 << 12
	CtrlRST      = 1 << 26 // port software reset
	CtrlDevRST   = 1 << 29 // device reset
	CtrlVME      = 1 << 30
	CtrlPHYRST   = 1 << 31
	ctrlSelfClr  = CtrlRST | CtrlDevRST
	ctrlResetVal = CtrlFD | CtrlSLU
)

// STATUS bits. The SPEED field reads 10b at both 1000 and 2500 Mb/s;
// Speed2500 tells them apart.
const (
	StatusFD         = 1 << 0
	StatusLU         = 1 << 1
	StatusTXOFF      = 1 << 4
	StatusSpeedShift = 6
	StatusSpeedMask  = 3 << StatusSpeedShift
	StatusSpeed100   = 1 << StatusSpeedShift
	StatusSpeed1000  = 2 << StatusSpeedShift
	StatusLANInit    = 1 << 9
	StatusPHYRA      = 1 << 10
	StatusGIOME      = 1 << 19 // GIO master enable: clear once CTRL.GIO_MASTER_DISABLE took effect
	StatusPFRstDone  = 1 << 21
	StatusSpeed2500  = 1 << 22
)

// EECD bits; EERD is the family's (nicmodel).
const (
	EecdPres     = 1 << 8
	EecdAutoRd   = 1 << 9
	EecdFlashDet = 1 << 19
	EecdSec1Val  = 1 << 25
)

// CTRL_EXT bits.
const (
	CtrlExtDrvLoad = 1 << 28
)

// Interrupt causes in ICR/ICS/IMS/IMC.
const (
	IntTXDW     = 1 << 0
	IntTXQE     = 1 << 1 // transmit queue 0 empty
	IntLSC      = 1 << 2
	IntRXDMT0   = 1 << 4
	IntRXO      = 1 << 6
	IntRXT0     = 1 << 7
	IntDRSTA    = 1 << 30
	IntAsserted = 1 << 31
	intCauses   = 0x7fffffff
)

// GPIE bits.
const (
	GpieNSICR  = 1 << 0  // non-selective clear on read of ICR
	GpieMSIX   = 1 << 4  // multiple MSI-X vectors: EICR bits are vectors
	GpieEIAME  = 1 << 30 // EIAM applies on interrupt assertion
	GpiePBASup = 1 << 31
)

// Extended interrupt bits: one per MSI-X vector (0..4). In MSI or INTx
// mode bits 3:0 are the queue vectors and bit 31 the other causes.
const (
	msixVectors = 5
	eicrVectors = 1<<msixVectors - 1
	EicrOther   = 1 << 31
	eicrLegacy  = 0xf | EicrOther
	IvarValid   = 0x80
	ivarVecMask = 0x1f

	// IVAR_MISC: bits 7:0 are the TCP timer's entry (not modelled), bits
	// 15:8 the other causes'.
	ivarMiscOtherShift = 8
)

// RCTL bits.
const (
	RctlEN       = 1 << 1
	RctlSBP      = 1 << 2
	RctlUPE      = 1 << 3
	RctlMPE      = 1 << 4
	RctlLPE      = 1 << 5
	RctlMOShift  = 12
	RctlBAM      = 1 << 15
	RctlBSizeSh  = 16
	RctlVFE      = 1 << 18
	RctlBSEX     = 1 << 25
	RctlSECRC    = 1 << 26
	rctlBSizeMsk = 3 << RctlBSizeSh
)

// TCTL bits.
const (
	TctlEN  = 1 << 1
	TctlPSP = 1 << 3
)

// SRRCTL fields.
const (
	SrrctlBSizePktMask  = 0x7f // 1 KiB units
	SrrctlBSizeHdrShift = 8    // 64 B units, bits 13:8
	SrrctlBSizeHdrMask  = 0x3f << SrrctlBSizeHdrShift
	SrrctlDescTypeShift = 25
	SrrctlDescTypeMask  = 7 << SrrctlDescTypeShift
	SrrctlDescLegacy    = 0 << SrrctlDescTypeShift
	SrrctlDescAdvOne    = 1 << SrrctlDescTypeShift
	SrrctlDescHdrSplit  = 2 << SrrctlDescTypeShift // header split
	SrrctlDescHdrAlways = 5 << SrrctlDescTypeShift // header split, always use the header buffer
	SrrctlDropEn        = 1 << 31
)

// RXDCTL and TXDCTL bits.
const (
	DctlEnable  = 1 << 25
	DctlSWFlush = 1 << 26
)

// RXCSUM bits.
const (
	RxcsumIPOFL = 1 << 8
	RxcsumTUOFL = 1 << 9
	RxcsumCRCOF = 1 << 11
	RxcsumPCSD  = 1 << 13
)

// MRQC: RSS enable in bits 2:0 and the hash fields.
const (
	MrqcEnableMask = 7
	MrqcEnableRSS  = 2
	MrqcTCPIPv4    = 1 << 16
	MrqcIPv4       = 1 << 17
	MrqcIPv6       = 1 << 20
	MrqcTCPIPv6    = 1 << 21
	MrqcUDPIPv4    = 1 << 22
	MrqcUDPIPv6    = 1 << 23
)

// RAH bits.
const RahAV = 1 << 31

// RLPML: the maximum frame length with LPE, CRC included.
const RlpmlMask = 0x3fff

// Queue register helpers.
func RxQ(reg uint32, q int) uint32 { return reg + QueueStride*uint32(q) }
func TxQ(reg uint32, q int) uint32 { return reg + QueueStride*uint32(q) }
