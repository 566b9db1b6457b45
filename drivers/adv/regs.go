package adv

// The registers and bits both families give identically: same offset,
// same bit meaning (82576 and I225 datasheets, section 8). What one family
// has alone, or places differently (EERD, the 82575's MSIXBM, the I225's
// CTRL.DEV_RST and 2.5 Gb/s status bit, the 82576's 5-tuple FTQF at
// TTQF's offset), stays in that family's driver.

// General, interrupt, receive and transmit control registers.
const (
	CTRL     = 0x00000
	STATUS   = 0x00008
	EECD     = 0x00010
	CTRL_EXT = 0x00018
	MDIC     = 0x00020

	ICR       = 0x01500
	ICS       = 0x01504
	IMS       = 0x01508
	IMC       = 0x0150c
	GPIE      = 0x01514
	EICS      = 0x01520
	EIMS      = 0x01524
	EIMC      = 0x01528
	EIAC      = 0x0152c // auto-clear: a vector's EICR bit clears as it fires
	EIAM      = 0x01530 // auto-mask: a vector's EIMS bit clears as it fires
	EICR      = 0x01580
	EITR0     = 0x01680 // EITR(n) = EITR0 + 4n, one per MSI-X vector
	IVAR0     = 0x01700 // IVAR(n) = IVAR0 + 4n
	IVAR_MISC = 0x01740

	RCTL = 0x00100
	TCTL = 0x00400
	TIPG = 0x00410

	RXCSUM = 0x05000
	RLPML  = 0x05004
	MTA    = 0x05200 // MTA(n) = MTA + 4n
	RAL0   = 0x05400
	RAH0   = 0x05404
	MRQC   = 0x05818
	RETA   = 0x05c00 // 32 registers, four one-byte entries each
	RSSRK  = 0x05c80 // 10 registers: the 40-byte hash key

	ETQF    = 0x05cb0 // ETQF(n) = ETQF + 4n: EtherType queue filters
	TTQF    = 0x059e0 // TTQF(n) = TTQF + 4n: 2-tuple filters, protocol and queue (82580 and later, I225)
	IMIR    = 0x05a80 // IMIR(n) = IMIR + 4n: the tuple filters' destination port
	IMIREXT = 0x05aa0 // IMIREXT(n) = IMIREXT + 4n: their size and TCP flag conditions
)

// Table sizes.
const (
	NumMTA      = 128
	RETAEntries = 128
	NumETQF     = 8
	NumIMIR     = 8 // tuple filters: TTQF (or FTQF), IMIR and IMIREXT each
)

// Per-queue registers: queue n's copy is at base + n*QueueStride.
const (
	QueueStride = 0x40

	RDBAL  = 0x0c000
	RDBAH  = 0x0c004
	RDLEN  = 0x0c008
	SRRCTL = 0x0c00c
	RDH    = 0x0c010
	RDT    = 0x0c018
	RXDCTL = 0x0c028
	RQDPC  = 0x0c030 // per-queue drop count

	TDBAL  = 0x0e000
	TDBAH  = 0x0e004
	TDLEN  = 0x0e008
	TDH    = 0x0e010
	TDT    = 0x0e018
	TXDCTL = 0x0e028
)

// QueueReg is queue n's copy of per-queue register base.
func QueueReg(base uint32, n int) uint32 { return base + uint32(n)*QueueStride }

// CTRL bits.
const (
	CTRL_FD         = 1 << 0
	CTRL_GIO_MASTER = 1 << 2 // GIO master disable
	CTRL_SLU        = 1 << 6
	CTRL_FRCSPD     = 1 << 11
	CTRL_FRCDPX     = 1 << 12
	CTRL_RST        = 1 << 26 // (port) software reset
	CTRL_PHY_RST    = 1 << 31
)

// STATUS bits.
const (
	STATUS_FD          = 1 << 0
	STATUS_LU          = 1 << 1
	STATUS_SPEED_SHIFT = 6
	STATUS_SPEED_MASK  = 3 << STATUS_SPEED_SHIFT
	STATUS_GIO_MASTER  = 1 << 19 // GIO master requests pending
)

// EECD, and the EERD bits (EERD itself sits at a different offset).
const (
	EECD_AUTO_RD    = 1 << 9
	EERD_START      = 1 << 0
	EERD_DONE       = 1 << 1
	EERD_ADDR_SHIFT = 2
	EERD_DATA_SHIFT = 16
)

// CTRL_EXT bits.
const CTRL_EXT_DRV_LOAD = 1 << 28

// MDIC: the MAC's window on the internal PHY's registers.
const (
	MDIC_DATA_MASK = 0xffff
	MDIC_REG_SHIFT = 16
	MDIC_PHY_SHIFT = 21
	MDIC_OP_WRITE  = 1 << 26
	MDIC_OP_READ   = 2 << 26
	MDIC_READY     = 1 << 28
	MDIC_ERROR     = 1 << 30

	PHYAddrInternal = 1 // the internal PHY's address on MDIC
)

// PHY registers (IEEE 802.3 clause 22) both drivers program.
const (
	PHY_BMCR        = 0
	BMCR_AN_RESTART = 1 << 9
	BMCR_AN_ENABLE  = 1 << 12
)

// Interrupt causes (ICR/ICS/IMS/IMC).
const (
	ICR_TXDW   = 1 << 0
	ICR_LSC    = 1 << 2
	ICR_RXDMT0 = 1 << 4
	ICR_RXO    = 1 << 6
	ICR_RXDW   = 1 << 7

	EICR_OTHER = 1 << 31 // outside MSI-X mode: the ICR causes
)

// GPIE bits (the 82575 has no GPIE).
const (
	GPIE_NSICR         = 1 << 0 // ICR reads clear whether or not an interrupt was asserted
	GPIE_MULTIPLE_MSIX = 1 << 4
	GPIE_EIAME         = 1 << 30 // EIAM applies when a vector fires
	GPIE_PBA           = 1 << 31 // PBA support: MSI-X pending bits
)

// IVAR entries and EITR.
const (
	IVAR_VALID            = 0x80
	IVAR_MISC_OTHER_SHIFT = 8 // IVAR_MISC bits 15:8: the other causes' vector

	EITR_INTERVAL_SHIFT = 2 // interval in microseconds, bits 14:2
	EITR_INTERVAL_MASK  = 0x1fff << EITR_INTERVAL_SHIFT
	EITR_CNT_IGNR       = 1 << 31 // write the interval without resetting the counter
)

// RCTL bits.
const (
	RCTL_EN    = 1 << 1
	RCTL_SBP   = 1 << 2
	RCTL_UPE   = 1 << 3
	RCTL_MPE   = 1 << 4
	RCTL_LPE   = 1 << 5
	RCTL_BAM   = 1 << 15
	RCTL_SECRC = 1 << 26
)

// SRRCTL: buffer sizes and descriptor type of one RX queue.
const (
	SRRCTL_BSIZEPKT_SHIFT      = 0 // packet buffer size in 1 KiB units
	SRRCTL_BSIZEHDR_SHIFT      = 8 // header buffer size in 64-byte units
	SRRCTL_DESCTYPE_ADV_ONEBUF = 1 << 25
	SRRCTL_DROP_EN             = 1 << 31
)

// RXDCTL and TXDCTL.
const (
	XDCTL_PTHRESH_SHIFT = 0
	XDCTL_HTHRESH_SHIFT = 8
	XDCTL_WTHRESH_SHIFT = 16
	XDCTL_ENABLE        = 1 << 25
	XDCTL_SWFLSH        = 1 << 26
)

// RXCSUM bits.
const (
	RXCSUM_IPOFL = 1 << 8
	RXCSUM_TUOFL = 1 << 9
	RXCSUM_PCSD  = 1 << 13 // packet checksum off: the RSS hash takes its place
)

// TCTL bits and fields.
const (
	TCTL_EN         = 1 << 1
	TCTL_PSP        = 1 << 3
	TCTL_CT_SHIFT   = 4
	TCTL_COLD_SHIFT = 12
	TCTL_RTLC       = 1 << 24

	TCTL_CT_DEFAULT = 0x0f // collision threshold
	TCTL_COLD_FD    = 0x3f // collision distance, full duplex
)

// RAH address-valid bit.
const RAH_AV = 1 << 31

// MRQC: RSS and the hashed fields.
const (
	MRQC_ENABLE_RSS         = 0x2
	MRQC_RSS_FIELD_IPV4_TCP = 1 << 16
	MRQC_RSS_FIELD_IPV4     = 1 << 17
	MRQC_RSS_FIELD_IPV6     = 1 << 20
	MRQC_RSS_FIELD_IPV6_TCP = 1 << 21
	MRQC_RSS_FIELD_IPV4_UDP = 1 << 22
	MRQC_RSS_FIELD_IPV6_UDP = 1 << 23
)

// ETQF: EtherType filters steering to a queue.
const (
	ETQF_ETYPE_MASK    = 0xffff
	ETQF_QUEUE_SHIFT   = 16
	ETQF_QUEUE_MASK    = 7 << ETQF_QUEUE_SHIFT
	ETQF_FILTER_ENABLE = 1 << 26
	ETQF_QUEUE_ENABLE  = 1 << 31
)

// Tuple filters: TTQF holds protocol and queue (the 82576's FTQF keeps
// these bits where TTQF has them), IMIR the destination port, IMIREXT the
// size and TCP flag conditions, each with a bypass bit.
const (
	TTQF_PROTOCOL_MASK = 0xff
	TTQF_QUEUE_ENABLE  = 1 << 8
	TTQF_QUEUE_SHIFT   = 16
	TTQF_QUEUE_MASK    = 7 << TTQF_QUEUE_SHIFT
	TTQF_MASK_PROTO    = 1 << 28 // set: the protocol is not compared

	IMIR_PORT_MASK      = 0xffff
	IMIR_PORT_BP        = 1 << 17 // set: the port is not compared
	IMIR_PRIORITY_SHIFT = 29

	IMIREXT_SIZE_BP = 1 << 12
	IMIREXT_CTRL_BP = 1 << 19
)
