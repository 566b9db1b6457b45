package m82574

import "github.com/ether9/ether9/kernel/sim/nicmodel"

// Register offsets in BAR0, named as in the 82574 datasheet (chapter 10):
// the 82574's own, and its queue registers where it keeps them. The
// family's are nicmodel's.
const (
	CTRLDup = 0x00004 // CTRL alias
	ITR     = 0x000c4
	EIAC    = 0x000dc
	IVAR    = 0x000e4
	FCTTV   = 0x00170
	TXCW    = 0x00178
	RXCW    = 0x00180
	EXTCNF  = 0x00f00 // EXTCNF_CTRL
	PBA     = 0x01000
	PBS     = 0x01008
	KABGTXD = 0x03004
	FCRTL   = 0x02160
	FCRTH   = 0x02168

	RDBAL      = 0x02800
	RDBAH      = 0x02804
	RDLEN      = 0x02808
	RDH        = 0x02810
	RDT        = 0x02818
	RDTR       = 0x02820
	RXDCTL     = 0x02828
	RADV       = 0x0282c
	RSRPD      = 0x02c00
	TDBAL      = 0x03800
	TDBAH      = 0x03804
	TDLEN      = 0x03808
	TDH        = 0x03810
	TDT        = 0x03818
	TIDV       = 0x03820
	TXDCTL     = 0x03828
	TADV       = 0x0382c
	TARC0      = 0x03840
	DTXTCPFLGL = 0x0359c // TCP flags masks, first and middle TSO segments
	DTXTCPFLGH = 0x035a0 // TCP flags mask, last TSO segment

	WUC    = 0x05800
	WUFC   = 0x05808
	MANC   = 0x05820
	GCR    = 0x05b00
	FACTPS = 0x05b30
	GCR2   = 0x05b64

	mmioSize = 128 << 10
	numRAR   = 16
	numMTA   = 128
	numVFTA  = 128
)

// Statistics registers: all read-to-clear. The family's common ones
// are nicmodel's; these are the 82574's own.
const (
	SYMERRS  = 0x04008
	SEC      = 0x04038
	CEXTERR  = 0x0403c
	ICRXPTC  = 0x04104
	ICRXATC  = 0x04108
	ICTXPTC  = 0x0410c
	ICTXATC  = 0x04110
	ICTXQEC  = 0x04118
	ICTXQMTC = 0x0411c
	ICRXDMTC = 0x04120
	ICRXOC   = 0x04124

	statsFirst = nicmodel.CRCERRS
	statsLast  = ICRXOC
)

// The 82574's own bits; the family's are nicmodel's.
const (
	CtrlASDE     = 1 << 5
	CtrlRFCE     = 1 << 27
	CtrlTFCE     = 1 << 28
	ctrlSelfClr  = nicmodel.CtrlRST
	ctrlResetVal = nicmodel.CtrlFD | CtrlASDE | 2<<nicmodel.CtrlSpeedSh

	StatusASDVSh = 8 // STATUS: auto speed detection value, SPEED's encoding

	CtrlExtSpdByps = 1 << 15
	CtrlExtEIAME   = 1 << 24
	CtrlExtIAME    = 1 << 27
	CtrlExtPBAClr  = 1 << 31

	RctlRDMTSh = 8
	RctlDTYPSh = 10
	RctlBSEX   = 1 << 25
	RctlFLXSh  = 27 // FLXBUF: buffer size in KiB when non-zero

	RfctlEXSTEN = 1 << 15

	MrqcRSSEnable = 1 << 0
)

// Interrupt causes (ICR, ICS, IMS, IMC, IAM) beyond the family's.
const (
	IntRXSEQ  = 1 << 3
	IntMDAC   = 1 << 9
	IntTXDLow = 1 << 15
	IntSRPD   = 1 << 16
	IntACK    = 1 << 17
	IntRXQ0   = 1 << 20
	IntRXQ1   = 1 << 21
	IntTXQ0   = 1 << 22
	IntTXQ1   = 1 << 23
	IntOther  = 1 << 24
	intCauses = 0x01ffffff
)

// Legacy and extended RX descriptor status bits (the low byte of the
// extended status is the legacy status byte).
const (
	RxdDD    = 1 << 0
	RxdEOP   = 1 << 1
	RxdIXSM  = 1 << 2
	RxdVP    = 1 << 3
	RxdUDPCS = 1 << 4
	RxdTCPCS = 1 << 5
	RxdIPCS  = 1 << 6
	RxdPIF   = 1 << 7
)

// Extended RX descriptor errors (status_error bits 31:20).
const (
	RxdErrCE   = 1 << 24
	RxdErrSE   = 1 << 25
	RxdErrSEQ  = 1 << 26
	RxdErrCXE  = 1 << 28
	RxdErrTCPE = 1 << 29
	RxdErrIPE  = 1 << 30
	RxdErrRXE  = 1 << 31
)

// Legacy RX descriptor error byte: the extended errors shifted down by 24.
const legacyErrShift = 24

// TX descriptor command bits (legacy CMD byte, extended DCMD and TUCMD).
const (
	TxdEOP  = 1 << 0
	TxdIFCS = 1 << 1
	TxdIC   = 1 << 2 // legacy: insert checksum
	TxdTSE  = 1 << 2 // extended data: TCP segmentation enable
	TxdRS   = 1 << 3
	TxdDEXT = 1 << 5
	TxdVLE  = 1 << 6
	TxdIDE  = 1 << 7

	TucmdTCP = 1 << 0 // context: L4 is TCP (else UDP)
	TucmdIP  = 1 << 1 // context: L3 is IPv4 (else IPv6)
	TucmdTSE = 1 << 2

	TxdDTYPContext = 0
	TxdDTYPData    = 1

	TxdStaDD = 1 << 0

	PoptsIXSM = 1 << 0
	PoptsTXSM = 1 << 1
)

const descLen = 16
