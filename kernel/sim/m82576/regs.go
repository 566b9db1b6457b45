package m82576

import "github.com/ether9/ether9/kernel/sim/nicmodel"

// Register offsets in BAR0 and their bits (82576 datasheet section 8):
// the 82576's own; the family's are nicmodel's. Queue registers are given
// for queue 0; queue n is 0x40*n further on.
const (
	TCTL_EXT = 0x00404

	// Interrupt registers at their 82575-and-later addresses, aliases of
	// the legacy ICR..IAM (nicmodel.ICR).
	ICRAlias = 0x01500
	IAMAlias = 0x01510

	RLPML   = 0x05004
	RAL16   = 0x054e0 // RAL(n) = RAL16 + 8(n-16), 16 <= n < 24
	SAQF0   = 0x05980 // SAQF(n) = SAQF0 + 4n, n < 8; likewise DAQF to IMIREXT
	DAQF0   = 0x059a0
	SPQF0   = 0x059c0
	FTQF0   = 0x059e0
	IMIR0   = 0x05a80
	IMIREXT = 0x05aa0
	SWFWSYN = 0x05b5c
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

// The 82576's own CTRL, STATUS, interrupt, IVAR and RAH bits.
const (
	CtrlDevRST   = 1 << 29
	ctrlResetVal = nicmodel.CtrlFD | 2<<nicmodel.CtrlSpeedSh | 1<<20 // full duplex, 1000 Mb/s, ADVD3WUC

	StatusPFRstDone = 1 << 21

	// ICR bits 6 and 7 under the 82576 datasheet's names.
	IntRXMiss = nicmodel.IntRXO
	IntRXDW   = nicmodel.IntRXT0
	intCauses = 0x7fffffff

	EicrTCPTimer  = 1 << 30 // EICR bit 30 outside MSI-X mode
	ivarVectorMsk = 0x1f

	RahPoolSh  = 18
	rahPoolMsk = 0xff
)

// MRQC: the multiple receive queues mode and the hash field enables
// beyond the family's.
const (
	MrqcModeMask    = 0x7
	MrqcRSS         = 0x2
	MrqcVMDq        = 0x3
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
