package nicmodel

// Register offsets in BAR0 that the 82574, 82576 and I225 datasheets give
// alike: same offset, same meaning. A part whose register sits elsewhere
// (the I225's EERD and interrupt registers, the 82574's queue registers)
// defines it in its own package under the datasheet's name.
const (
	CTRL     = 0x00000
	STATUS   = 0x00008
	EECD     = 0x00010
	CTRL_EXT = 0x00018
	MDIC     = 0x00020
	FCAL     = 0x00028
	FCAH     = 0x0002c
	FCT      = 0x00030
	VET      = 0x00038
	RCTL     = 0x00100
	TCTL     = 0x00400
	TIPG     = 0x00410
	RXCSUM   = 0x05000
	RFCTL    = 0x05008
	MTA      = 0x05200 // 128 registers
	RAL0     = 0x05400 // RAL(n) = RAL0 + 8n, n < 16
	RAH0     = 0x05404 // RAH(n) = RAH0 + 8n, n < 16
	VFTA     = 0x05600 // 128 registers
	MRQC     = 0x05818
	SWSM     = 0x05b50
	FWSM     = 0x05b54
	RETA     = 0x05c00 // 32 registers, four 8-bit entries each
	RSSRK    = 0x05c80 // 10 registers
)

// The 82574's and 82576's EERD and interrupt registers. The I225 moved
// EERD to 0x12014 and the interrupt registers to 0x1500.
const (
	EERD = 0x00014
	ICR  = 0x000c0
	ICS  = 0x000c8
	IMS  = 0x000d0
	IMC  = 0x000d8
	IAM  = 0x000e0
)

// The 82576's and I225's extended (MSI-X) interrupt registers. The
// 82574 has an EIAC and an IVAR of its own at other offsets.
const (
	GPIE      = 0x01514
	EICS      = 0x01520
	EIMS      = 0x01524
	EIMC      = 0x01528
	EIAC      = 0x0152c
	EIAM      = 0x01530
	EICR      = 0x01580
	EITR0     = 0x01680 // EITR(n) = EITR0 + 4n
	IVAR0     = 0x01700 // IVAR(n) = IVAR0 + 4n
	IVAR_MISC = 0x01740
)

// CTRL bits. The SPEED field is the 82574's and 82576's.
const (
	CtrlFD      = 1 << 0
	CtrlGIOMDis = 1 << 2 // GIO master disable
	CtrlSLU     = 1 << 6
	CtrlSpeedSh = 8 // SPEED, STATUS.SPEED's encoding
	CtrlFrcSpd  = 1 << 11
	CtrlFrcDplx = 1 << 12
	CtrlRST     = 1 << 26
	CtrlVME     = 1 << 30
	CtrlPHYRST  = 1 << 31
)

// STATUS bits. SPEED: 00b 10 Mb/s, 01b 100 Mb/s, 10b 1000 Mb/s (and on
// the I225 2500 Mb/s, told apart by a bit of its own).
const (
	StatusFD      = 1 << 0
	StatusLU      = 1 << 1
	StatusTXOFF   = 1 << 4
	StatusSpeedSh = 6
	StatusPHYRA   = 1 << 10
	StatusGIOME   = 1 << 19 // GIO master enable: clear once CtrlGIOMDis took effect
)

// EECD bits. Presence and auto-read are every part's; the bit-banged
// SPI interface and its grant are the 82574's and 82576's.
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

// CTRL_EXT bits. EE_RST is the 82574's and 82576's.
const (
	CtrlExtEERst   = 1 << 13
	CtrlExtDrvLoad = 1 << 28
)

// Interrupt causes (ICR, ICS, IMS, IMC, IAM). TXQE, RXO and RXT0 are
// named as the 82574 and I225 datasheets name them; the 82576's names
// bits 6 and 7 RXMISS and RXDW, and its model says so.
const (
	IntTXDW     = 1 << 0
	IntTXQE     = 1 << 1
	IntLSC      = 1 << 2
	IntRXDMT0   = 1 << 4
	IntRXO      = 1 << 6
	IntRXT0     = 1 << 7
	IntAsserted = 1 << 31
)

// GPIE bits (82576, I225).
const (
	GpieNSICR     = 1 << 0  // non-selective clear on read of ICR
	GpieMultiMSIX = 1 << 4  // multiple MSI-X vectors: EICR bits are vectors
	GpieEIAME     = 1 << 30 // EIAM applies on interrupt assertion
	GpiePBA       = 1 << 31
)

// EICR and IVAR (82576, I225): outside MSI-X mode EICR bit 31 stands for
// the other causes; an IVAR entry is a byte, a vector and a valid bit.
const (
	EicrOther = 1 << 31
	IvarValid = 0x80
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

// TCTL bits and fields.
const (
	TctlEN     = 1 << 1
	TctlPSP    = 1 << 3
	TctlCTSh   = 4  // collision threshold
	TctlCOLDSh = 12 // collision distance
)

// SWSM bits.
const SwsmSMBI = 1 << 0 // software semaphore: set by a read

// RXCSUM bits. CRCOFL is the 82576's and I225's.
const (
	RxcsumPCSSMask = 0xff
	RxcsumIPOFL    = 1 << 8
	RxcsumTUOFL    = 1 << 9
	RxcsumCRCOFL   = 1 << 11
	RxcsumPCSD     = 1 << 13
)

// MRQC RSS hash field enables. The IPv6 extension header ones are the
// 82574's and 82576's, the UDP ones the 82576's and I225's.
const (
	MrqcTCPIPv4   = 1 << 16
	MrqcIPv4      = 1 << 17
	MrqcTCPIPv6Ex = 1 << 18
	MrqcIPv6Ex    = 1 << 19
	MrqcIPv6      = 1 << 20
	MrqcTCPIPv6   = 1 << 21
	MrqcUDPIPv4   = 1 << 22
	MrqcUDPIPv6   = 1 << 23
)

// RAH bits.
const RahAV = 1 << 31
