package m82574

import "github.com/ether9/ether9/kernel/sim/nicmodel"

// Register offsets in BAR0, named as in the 82574 datasheet (chapter 10).
const (
	CTRL     = 0x00000
	CTRLDup  = 0x00004 // CTRL alias
	STATUS   = 0x00008
	EECD     = 0x00010
	EERD     = 0x00014
	CTRL_EXT = 0x00018
	MDIC     = 0x00020
	FCAL     = 0x00028
	FCAH     = 0x0002c
	FCT      = 0x00030
	VET      = 0x00038
	ICR      = 0x000c0
	ITR      = 0x000c4
	ICS      = 0x000c8
	IMS      = 0x000d0
	IMC      = 0x000d8
	EIAC     = 0x000dc
	IAM      = 0x000e0
	IVAR     = 0x000e4
	RCTL     = 0x00100
	FCTTV    = 0x00170
	TXCW     = 0x00178
	RXCW     = 0x00180
	TCTL     = 0x00400
	TIPG     = 0x00410
	EXTCNF   = 0x00f00 // EXTCNF_CTRL
	PBA      = 0x01000
	PBS      = 0x01008
	KABGTXD  = 0x03004
	FCRTL    = 0x02160
	FCRTH    = 0x02168

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

	RXCSUM = 0x05000
	RFCTL  = 0x05008
	MTA    = 0x05200 // 128 entries
	RAL0   = 0x05400 // RAL(n) = RAL0 + 8n, RAH(n) = RAL0 + 8n + 4
	VFTA   = 0x05600 // 128 entries
	WUC    = 0x05800
	WUFC   = 0x05808
	MANC   = 0x05820
	MRQC   = 0x05818
	GCR    = 0x05b00
	FACTPS = 0x05b30
	SWSM   = 0x05b50
	FWSM   = 0x05b54
	GCR2   = 0x05b64
	RETA   = 0x05c00 // 32 entries
	RSSRK  = 0x05c80 // 10 entries

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

// CTRL bits.
const (
	CtrlFD       = 1 << 0
	CtrlGIOMDis  = 1 << 2 // GIO master disable
	CtrlASDE     = 1 << 5
	CtrlSLU      = 1 << 6
	CtrlSpeedSh  = 8
	CtrlFrcSpd   = 1 << 11
	CtrlFrcDplx  = 1 << 12
	CtrlRST      = 1 << 26
	CtrlRFCE     = 1 << 27
	CtrlTFCE     = 1 << 28
	CtrlVME      = 1 << 30
	CtrlPHYRST   = 1 << 31
	ctrlSelfClr  = CtrlRST
	ctrlResetVal = CtrlFD | CtrlASDE | 2<<CtrlSpeedSh
)

// STATUS bits.
const (
	StatusFD      = 1 << 0
	StatusLU      = 1 << 1
	StatusTXOFF   = 1 << 4
	StatusSpeedSh = 6 // 00 10 Mb/s, 01 100 Mb/s, 10 1000 Mb/s
	StatusASDVSh  = 8 // auto speed detection value, same encoding
	StatusPHYRA   = 1 << 10
	StatusGIOME   = 1 << 19 // GIO master enable status
)

// EECD bits; EERD is the family's (nicmodel).
const (
	EecdSK     = 1 << 0
	EecdCS     = 1 << 1
	EecdDI     = 1 << 2
	EecdDO     = 1 << 3
	EecdReq    = 1 << 6
	EecdGnt    = 1 << 7
	EecdPres   = 1 << 8
	EecdAutoRd = 1 << 9
	EecdSizeSh = 11 // NVM word size = 1 << (field + 6)
)

// CTRL_EXT bits.
const (
	CtrlExtEERst   = 1 << 13
	CtrlExtSpdByps = 1 << 15
	CtrlExtEIAME   = 1 << 24
	CtrlExtIAME    = 1 << 27
	CtrlExtDrvLoad = 1 << 28
	CtrlExtPBAClr  = 1 << 31
)

// Interrupt causes (ICR, ICS, IMS, IMC, IAM).
const (
	IntTXDW     = 1 << 0
	IntTXQE     = 1 << 1
	IntLSC      = 1 << 2
	IntRXSEQ    = 1 << 3
	IntRXDMT0   = 1 << 4
	IntRXO      = 1 << 6
	IntRXT0     = 1 << 7
	IntMDAC     = 1 << 9
	IntTXDLow   = 1 << 15
	IntSRPD     = 1 << 16
	IntACK      = 1 << 17
	IntRXQ0     = 1 << 20
	IntRXQ1     = 1 << 21
	IntTXQ0     = 1 << 22
	IntTXQ1     = 1 << 23
	IntOther    = 1 << 24
	IntAsserted = 1 << 31
	intCauses   = 0x01ffffff
)

// RCTL bits.
const (
	RctlEN     = 1 << 1
	RctlSBP    = 1 << 2
	RctlUPE    = 1 << 3
	RctlMPE    = 1 << 4
	RctlLPE    = 1 << 5
	RctlRDMTSh = 8
	RctlDTYPSh = 10
	RctlMOSh   = 12
	RctlBAM    = 1 << 15
	RctlBSIZSh = 16
	RctlVFE    = 1 << 18
	RctlBSEX   = 1 << 25
	RctlSECRC  = 1 << 26
	RctlFLXSh  = 27 // FLXBUF: buffer size in KiB when non-zero
)

// RFCTL bits.
const RfctlEXSTEN = 1 << 15

// RXCSUM fields.
const (
	RxcsumPCSSMask = 0xff
	RxcsumIPOFL    = 1 << 8
	RxcsumTUOFL    = 1 << 9
	RxcsumPCSD     = 1 << 13
)

// MRQC fields.
const (
	MrqcRSSEnable = 1 << 0
	MrqcTCPIPv4   = 1 << 16
	MrqcIPv4      = 1 << 17
	MrqcTCPIPv6Ex = 1 << 18
	MrqcIPv6Ex    = 1 << 19
	MrqcIPv6      = 1 << 20
	MrqcTCPIPv6   = 1 << 21
)

// TCTL bits.
const (
	TctlEN  = 1 << 1
	TctlPSP = 1 << 3
)

// RAH bits.
const RahAV = 1 << 31

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
