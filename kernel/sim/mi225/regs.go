package mi225

import "github.com/ether9/ether9/kernel/sim/nicmodel"

// Register offsets in BAR0, from the I225 datasheet's register summary:
// the I225's own, and those it moved from where the 82574 and 82576 keep
// them (the interrupt registers, EERD). The family's are nicmodel's.
const (
	ICR   = 0x01500
	ICS   = 0x01504
	IMS   = 0x01508
	IMC   = 0x0150c
	IAM   = 0x01510
	RLPML = 0x05004
	EEC   = 0x12010 // the datasheet's name for EECD; both offsets reach it
	EERD  = 0x12014

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

// The I225's own CTRL, STATUS, EEC and interrupt bits.
const (
	CtrlDevRST   = 1 << 29 // device reset
	ctrlSelfClr  = nicmodel.CtrlRST | CtrlDevRST
	ctrlResetVal = nicmodel.CtrlFD | nicmodel.CtrlSLU

	// The SPEED field reads 10b at both 1000 and 2500 Mb/s; Speed2500
	// tells them apart.
	StatusSpeedMask = 3 << nicmodel.StatusSpeedSh
	StatusSpeed100  = 1 << nicmodel.StatusSpeedSh
	StatusSpeed1000 = 2 << nicmodel.StatusSpeedSh
	StatusLANInit   = 1 << 9
	StatusPFRstDone = 1 << 21
	StatusSpeed2500 = 1 << 22

	EecdFlashDet = 1 << 19
	EecdSec1Val  = 1 << 25

	IntDRSTA  = 1 << 30
	intCauses = 0x7fffffff
)

// Extended interrupt bits: one per MSI-X vector (0..4). In MSI or INTx
// mode bits 3:0 are the queue vectors and bit 31 the other causes.
const (
	msixVectors = 5
	eicrVectors = 1<<msixVectors - 1
	eicrLegacy  = 0xf | nicmodel.EicrOther
	ivarVecMask = 0x1f

	// IVAR_MISC: bits 7:0 are the TCP timer's entry (not modelled), bits
	// 15:8 the other causes'.
	ivarMiscOtherShift = 8
)

// RCTL bits beyond the family's.
const (
	RctlBSEX     = 1 << 25
	rctlBSizeMsk = 3 << nicmodel.RctlBSIZSh
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

// MRQC: RSS enable in bits 2:0 and the hash fields.
const (
	MrqcEnableMask = 7
	MrqcEnableRSS  = 2
)

// RLPML: the maximum frame length with LPE, CRC included.
const RlpmlMask = 0x3fff

// Queue register helpers.
func RxQ(reg uint32, q int) uint32 { return reg + QueueStride*uint32(q) }
func TxQ(reg uint32, q int) uint32 { return reg + QueueStride*uint32(q) }
