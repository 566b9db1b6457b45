package m82576

import "github.com/ether9/ether9/kernel/sim/nicmodel"

// Register offsets in BAR0 and their bits (82576 datasheet section 8).
// Queue registers are given for queue 0; queue n is 0x40*n further on.
const (
	CTRL     = 0x00000
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
	ICS      = 0x000c8
	IMS      = 0x000d0
	IMC      = 0x000d8
	IAM      = 0x000e0
	RCTL     = 0x00100
	TCTL     = 0x00400
	TCTL_EXT = 0x00404
	TIPG     = 0x00410

	GPIE      = 0x01514
	EICS      = 0x01520
	EIMS      = 0x01524
	EIMC      = 0x01528
	EIAC      = 0x0152c
	EIAM      = 0x01530
	EICR      = 0x01580
	EITR0     = 0x01680 // EITR(n) = EITR0 + 4n
	IVAR0     = 0x01700 // IVAR(n) = IVAR0 + 4n, n < 8
	IVAR_MISC = 0x01740

	// Interrupt registers at their 82575-and-later addresses, aliases of
	// ICR..IAM above.
	ICRAlias = 0x01500
	IAMAlias = 0x01510

	RXCSUM  = 0x05000
	RLPML   = 0x05004
	RFCTL   = 0x05008
	MTA     = 0x05200 // 128 registers
	RAL0    = 0x05400 // RAL(n) = RAL0 + 8n, RAH(n) = RAL(n) + 4, n < 16
	RAL16   = 0x054e0 // RAL(n) = RAL16 + 8(n-16), 16 <= n < 24
	VFTA    = 0x05600 // 128 registers
	MRQC    = 0x05818
	SAQF0   = 0x05980 // SAQF(n) = SAQF0 + 4n, n < 8; likewise DAQF to IMIREXT
	DAQF0   = 0x059a0
	SPQF0   = 0x059c0
	FTQF0   = 0x059e0
	IMIR0   = 0x05a80
	IMIREXT = 0x05aa0
	SWSM    = 0x05b50
	FWSM    = 0x05b54
	SWFWSYN = 0x05b5c
	RETA    = 0x05c00 // 32 registers, 4 entries each
	RSSRK   = 0x05c80 // 10 registers
	ETQF0   = 0x05cb0 // ETQF(n) = ETQF0 + 4n, n < 8

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
	TDWBAL = 0x0e038
	TDWBAH = 0x0e03c

	// Per-queue statistics: queue n at 0x100*n further on.
	PQGPRC = 0x10010
	PQGPTC = 0x10014
	PQGORC = 0x10018
	PQGOTC = 0x10034
)

// The statistics registers (read to clear) are the family's (nicmodel),
// from CRCERRS to the 82576's last.
const (
	statsFirst = nicmodel.CRCERRS
	statsLast  = 0x04124
)

const (
	mmioSize  = 128 << 10
	numQueues = 16
	queueSize = 0x40
	numRAR    = 24
	numETQF   = 8
	numFTQF   = 8
	retaSize  = 128
	descLen   = nicmodel.DescLen
)

// CTRL bits.
const (
	CtrlFD      = 1 << 0
	CtrlGIOMDis = 1 << 2
	CtrlSLU     = 1 << 6
	CtrlRST     = 1 << 26
	CtrlDevRST  = 1 << 29
	CtrlVME     = 1 << 30
	CtrlPHYRST  = 1 << 31

	ctrlResetVal = CtrlFD | 2<<8 | 1<<20 // full duplex, 1000 Mb/s, ADVD3WUC
)

// STATUS bits.
const (
	StatusFD        = 1 << 0
	StatusLU        = 1 << 1
	StatusSpeedSh   = 6
	StatusGIOME     = 1 << 19
	StatusPFRstDone = 1 << 21
)

// EECD bits; EERD and MDIC are the family's (nicmodel).
const (
	EecdSK     = 1 << 0
	EecdCS     = 1 << 1
	EecdDI     = 1 << 2
	EecdReq    = 1 << 6
	EecdGnt    = 1 << 7
	EecdPres   = 1 << 8
	EecdAutoRd = 1 << 9
	EecdSizeSh = 11
)

// CTRL_EXT bits.
const (
	CtrlExtEERst   = 1 << 13
	CtrlExtDrvLoad = 1 << 28
)

// ICR causes.
const (
	IntTXDW     = 1 << 0
	IntLSC      = 1 << 2
	IntRXDMT0   = 1 << 4
	IntRXMiss   = 1 << 6
	IntRXDW     = 1 << 7
	IntAsserted = 1 << 31

	intCauses = 0x7fffffff
)

// GPIE bits.
const (
	GpieNSICR    = 1 << 0
	GpieMultiMSI = 1 << 4
	GpieEIAME    = 1 << 30
	GpiePBA      = 1 << 31
)

// EICR bits outside MSI-X mode.
const (
	EicrTCPTimer = 1 << 30
	EicrOther    = 1 << 31
)

// IVAR entries: one byte each, a vector number and a valid bit.
const (
	IvarValid     = 0x80
	ivarVectorMsk = 0x1f
)

// RCTL bits.
const (
	RctlEN     = 1 << 1
	RctlSBP    = 1 << 2
	RctlUPE    = 1 << 3
	RctlMPE    = 1 << 4
	RctlLPE    = 1 << 5
	RctlMOSh   = 12
	RctlBAM    = 1 << 15
	RctlBSIZSh = 16
	RctlVFE    = 1 << 18
	RctlSECRC  = 1 << 26
)

// TCTL bits.
const (
	TctlEN  = 1 << 1
	TctlPSP = 1 << 3
)

// RXCSUM bits.
const (
	RxcsumPCSSMask = 0xff
	RxcsumIPOFL    = 1 << 8
	RxcsumTUOFL    = 1 << 9
	RxcsumCRCOFL   = 1 << 11
	RxcsumPCSD     = 1 << 13
)

// RAH bits.
const (
	RahAV      = 1 << 31
	RahPoolSh  = 18
	rahPoolMsk = 0xff
)

// MRQC: the multiple receive queues mode and the RSS hash field enables.
const (
	MrqcModeMask    = 0x7
	MrqcRSS         = 0x2
	MrqcVMDq        = 0x3
	MrqcTCPIPv4     = 1 << 16
	MrqcIPv4        = 1 << 17
	MrqcTCPIPv6Ex   = 1 << 18
	MrqcIPv6Ex      = 1 << 19
	MrqcIPv6        = 1 << 20
	MrqcTCPIPv6     = 1 << 21
	MrqcUDPIPv4     = 1 << 22
	MrqcUDPIPv6     = 1 << 23
	MrqcUDPIPv6Ex   = 1 << 24
	mrqcFieldsShift = 16
)

// ETQF bits.
const (
	EtqfQueueSh = 16
	etqfQueueMk = 0x7
	EtqfFilter  = 1 << 26
	EtqfQueueEn = 1 << 31
)

// FTQF, SPQF, IMIR and IMIREXT bits: the 5-tuple queue filters (see
// filter.go).
const (
	FtqfProtoMask   = 0xff
	FtqfQueueEn     = 1 << 8
	FtqfQueueSh     = 16
	ftqfQueueMk     = 0x7
	FtqfMaskProto   = 1 << 28 // set: the protocol is not compared
	FtqfMaskSrcAddr = 1 << 29 // set: SAQF is not compared
	FtqfMaskDstAddr = 1 << 30 // set: DAQF is not compared
	FtqfMaskSrcPort = 1 << 31 // set: SPQF is not compared

	SpqfPortMask = 0xffff

	ImirPortMask = 0xffff
	ImirPortBP   = 1 << 17
	ImirPrioSh   = 29

	ImirextSizeMask = 0xfff
	ImirextSizeBP   = 1 << 12
	ImirextCtrlSh   = 13
	ImirextCtrlBP   = 1 << 19
)

// SRRCTL fields.
const (
	SrrctlBSizePktMask = 0x7f // KiB
	SrrctlBSizeHdrSh   = 8
	SrrctlDescTypeSh   = 25
	SrrctlDescTypeMask = 0x7
	SrrctlDropEn       = 1 << 31

	DescTypeLegacy    = 0
	DescTypeAdvOneBuf = 1
)

// RXDCTL and TXDCTL bits.
const (
	RxdctlEnable = 1 << 25
	TxdctlEnable = 1 << 25
	TdwbalEnable = 1 << 0
)
