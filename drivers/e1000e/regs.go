package e1000e

// Register offsets in BAR0, named as in the 82574 and PCH datasheets.
const (
	CTRL     = 0x00000 // Device Control
	STATUS   = 0x00008 // Device Status
	EECD     = 0x00010 // EEPROM/Flash Control
	EERD     = 0x00014 // EEPROM Read
	CTRL_EXT = 0x00018 // Extended Device Control
	MDIC     = 0x00020 // MDI Control
	FCAL     = 0x00028 // Flow Control Address Low
	FCAH     = 0x0002C // Flow Control Address High
	FCT      = 0x00030 // Flow Control Type
	ICR      = 0x000C0 // Interrupt Cause Read (read to clear)
	ITR      = 0x000C4 // Interrupt Throttling Rate
	ICS      = 0x000C8 // Interrupt Cause Set
	IMS      = 0x000D0 // Interrupt Mask Set/Read
	IMC      = 0x000D8 // Interrupt Mask Clear
	IAM      = 0x000E0 // Interrupt Acknowledge Auto Mask
	RCTL     = 0x00100 // Receive Control
	FCTTV    = 0x00170 // Flow Control Transmit Timer Value
	TCTL     = 0x00400 // Transmit Control
	TIPG     = 0x00410 // Transmit IPG
	EXTCNF   = 0x00F00 // Extended Configuration Control
	PBA      = 0x01000 // Packet Buffer Allocation
	FCRTL    = 0x02160 // Flow Control Receive Threshold Low
	FCRTH    = 0x02168 // Flow Control Receive Threshold High
	RDBAL    = 0x02800 // RX Descriptor Base Address Low (queue 0)
	RDBAH    = 0x02804
	RDLEN    = 0x02808
	RDH      = 0x02810
	RDT      = 0x02818
	RDTR     = 0x02820 // RX Interrupt Delay Timer
	RXDCTL   = 0x02828
	RADV     = 0x0282C // RX Interrupt Absolute Delay Timer
	TDBAL    = 0x03800 // TX Descriptor Base Address Low (queue 0)
	TDBAH    = 0x03804
	TDLEN    = 0x03808
	TDH      = 0x03810
	TDT      = 0x03818
	TIDV     = 0x03820 // TX Interrupt Delay Value
	TXDCTL   = 0x03828
	TADV     = 0x0382C // TX Absolute Interrupt Delay Value
	TARC0    = 0x03840 // TX Arbitration Count
	RXCSUM   = 0x05000 // RX Checksum Control
	RFCTL    = 0x05008 // Receive Filter Control
	MTA      = 0x05200 // Multicast Table Array, mtaRegs entries
	mtaRegs  = 128     // MTA entries: 4096 hash bits
	RAL0     = 0x05400 // Receive Address Low
	RAH0     = 0x05404 // Receive Address High
)

// CTRL bits.
const (
	CTRL_FD         = 1 << 0 // full duplex
	CTRL_GIO_MASTER = 1 << 2 // GIO master disable
	CTRL_LRST       = 1 << 3 // link reset
	CTRL_ASDE       = 1 << 5 // auto-speed detection enable
	CTRL_SLU        = 1 << 6 // set link up
	CTRL_FRCSPD     = 1 << 11
	CTRL_FRCDPX     = 1 << 12
	CTRL_RST        = 1 << 26 // device reset, self-clearing
	CTRL_RFCE       = 1 << 27
	CTRL_TFCE       = 1 << 28
	CTRL_VME        = 1 << 30
	CTRL_PHY_RST    = 1 << 31
)

// STATUS bits.
const (
	STATUS_FD          = 1 << 0
	STATUS_LU          = 1 << 1
	STATUS_TXOFF       = 1 << 4
	STATUS_SPEED_SHIFT = 6
	STATUS_SPEED_MASK  = 3 << STATUS_SPEED_SHIFT
	STATUS_LAN_INIT    = 1 << 9  // PCH: LAN init done after reset
	STATUS_GIO_MASTER  = 1 << 19 // GIO master enable status
)

// EECD and EERD bits.
const (
	EECD_AUTO_RD    = 1 << 9 // NVM auto-read done
	EERD_START      = 1 << 0
	EERD_DONE       = 1 << 1
	EERD_ADDR_SHIFT = 2
	EERD_DATA_SHIFT = 16
	nvmWordsMAC     = 3 // NVM words 0..2 hold the MAC address
	nvmReadAttempts = 100000
)

// CTRL_EXT bits.
const (
	CTRL_EXT_DRV_LOAD = 1 << 28 // driver loaded: firmware keeps its hands off
)

// Interrupt cause bits (ICR, ICS, IMS, IMC).
const (
	ICR_TXDW   = 1 << 0 // descriptor written back
	ICR_TXQE   = 1 << 1
	ICR_LSC    = 1 << 2 // link status change
	ICR_RXSEQ  = 1 << 3
	ICR_RXDMT0 = 1 << 4 // RX descriptor minimum threshold
	ICR_RXO    = 1 << 6 // receiver overrun
	ICR_RXT0   = 1 << 7 // receiver timer
)

// RCTL bits.
const (
	RCTL_EN       = 1 << 1
	RCTL_SBP      = 1 << 2
	RCTL_UPE      = 1 << 3
	RCTL_MPE      = 1 << 4
	RCTL_LPE      = 1 << 5 // long packets (above 1522 bytes)
	RCTL_RDMTS_HF = 0 << 8 // threshold at half the ring
	RCTL_DTYP_MSK = 3 << 10
	RCTL_MO_47_36 = 0 << 12 // multicast offset: MTA hash from address bits 47:36
	RCTL_BAM      = 1 << 15
	RCTL_SZ_2048  = 0 << 16 // with BSEX=0
	RCTL_SZ_MASK  = 3 << 16
	RCTL_BSEX     = 1 << 25
	RCTL_SECRC    = 1 << 26 // strip Ethernet CRC
)

// RFCTL bits.
const (
	RFCTL_EXSTEN = 1 << 15 // extended status: extended RX descriptors
)

// RXCSUM bits.
const (
	RXCSUM_IPOFL = 1 << 8 // IP checksum offload
	RXCSUM_TUOFL = 1 << 9 // TCP/UDP checksum offload
	RXCSUM_PCSD  = 1 << 13
)

// TCTL bits and fields.
const (
	TCTL_EN         = 1 << 1
	TCTL_PSP        = 1 << 3 // pad short packets
	TCTL_CT_SHIFT   = 4
	TCTL_COLD_SHIFT = 12
	TCTL_RTLC       = 1 << 24
	TCTL_MULR       = 1 << 28

	tctlCT     = 0x0F              // collision threshold
	tctlCOLD   = 0x3F              // collision distance, full duplex
	tipgCopper = 8 | 8<<10 | 6<<20 // IPGT 8, IPGR1 8, IPGR2 6
)

// TXDCTL and RXDCTL bits.
const (
	TXDCTL_GRAN       = 1 << 24 // thresholds count descriptors
	TXDCTL_COUNT_DESC = 1 << 22
	TXDCTL_WTHRESH_1  = 1 << 16
	RXDCTL_GRAN       = 1 << 24
)

// RAH bits.
const RAH_AV = 1 << 31 // address valid
