package igc

// Registers and bits of the I225/I226 (I225 datasheet section 8) that the
// 82576 family lacks or places elsewhere; those the two give identically
// are in adv. Names follow the datasheet.
const (
	EERD = 0x12014 // NVM read through the flash interface

	CTRL_DEV_RST = 1 << 29 // device reset: the whole function, self-clearing

	// 2.5 Gb/s shows as the 1000 Mb/s code in STATUS.SPEED plus this bit.
	STATUS_SPEED_2500 = 1 << 22

	tipgIPGT = 8
)
