package igb

import "github.com/ether9/ether9/drivers/nicstat"

// Registers and bits of the 82575/82576 family (82576 datasheet section 8)
// that the I225 lacks or places elsewhere; those the two give identically
// are in adv. Names follow the datasheet.
const (
	EERD     = 0x00014 // NVM read
	TCTL_EXT = 0x00404

	// ICR, IMS and IMC where every part of the family decodes them, as
	// Linux's igb uses them; the 82576's 0x01500 block is their alias,
	// which QEMU's igb does not decode (its writes there are dropped).
	ICR = 0x000c0
	IMS = 0x000d0
	IMC = 0x000d8

	// FTQF is the 82576's 5-tuple queue filter at TTQF's offset (the
	// 82580 and later put their 2-tuple TTQF there). Protocol, queue and
	// enable keep TTQF's bits; these compare the IPv4 source address
	// (SAQF), destination address (DAQF) and source port (SPQF) unless
	// set. On TTQF they are reserved.
	FTQF                     = 0x059e0 // FTQF(n) = FTQF + 4n
	FTQF_MASK_SOURCE_ADDR_BP = 1 << 29
	FTQF_MASK_DEST_ADDR_BP   = 1 << 30
	FTQF_MASK_SOURCE_PORT_BP = 1 << 31
)

// TIPG for copper: IPGT 8, IPGR1 8, IPGR2 6.
const tipgCopper = 8 | 8<<10 | 6<<20

// EICR/EIMS cause bits of the 82575, where EICR bits are causes rather
// than queues an IVAR names.
const (
	EICR_RX_QUEUE0 = 1 << 0 // RX queue n is bit n
	EICR_TX_QUEUE0 = 1 << 8 // TX queue n is bit 8+n
)

// The statistics block's first and last registers; the counters themselves
// are in nicstat.
const (
	CRCERRS = nicstat.CRCERRS
	TSCTFC  = nicstat.TSCTFC
)
