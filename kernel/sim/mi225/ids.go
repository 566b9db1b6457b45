package mi225

import "fmt"

// Family is the generation within the igc family.
type Family uint8

const (
	I225 Family = iota
	I226
)

func (f Family) String() string {
	if f == I226 {
		return "I226"
	}
	return "I225"
}

// Part is one device id of the family.
type Part struct {
	Device   uint16
	Name     string
	Family   Family
	BlankNVM bool // the NVM was never programmed: no MAC address, words read 0xFFFF
	MaxMbps  int  // the fastest speed the PHY offers
}

// VendorIntel is Intel's PCI vendor id.
const VendorIntel = 0x8086

// Parts lists every device id of the igc family.
var Parts = []Part{
	{0x15f2, "I225-LM", I225, false, 2500},
	{0x15f3, "I225-V", I225, false, 2500},
	{0x15f8, "I225-I", I225, false, 2500},
	{0x3100, "I225-K", I225, false, 2500},
	{0x3101, "I225-K2", I225, false, 2500},
	{0x5502, "I225-LMVP", I225, false, 2500},
	{0x0d9f, "I225-IT", I225, false, 2500},
	{0x15fd, "I225 blank NVM", I225, true, 2500},
	{0x15f7, "I220-V", I225, false, 1000}, // 1 GbE members of the family
	{0x125e, "I221-V", I225, false, 1000},
	{0x125b, "I226-LM", I226, false, 2500},
	{0x125c, "I226-V", I226, false, 2500},
	{0x125d, "I226-IT", I226, false, 2500},
	{0x3102, "I226-K", I226, false, 2500},
	{0x5503, "I226-LMVP", I226, false, 2500},
	{0x125f, "I226 blank NVM", I226, true, 2500},
}

// PartByID returns the part with PCI device id dev.
func PartByID(dev uint16) (Part, error) {
	for _, p := range Parts {
		if p.Device == dev {
			return p, nil
		}
	}
	return Part{}, fmt.Errorf("mi225: device id %#04x is not an igc part", dev)
}

func (p Part) supports(mbps int) bool {
	switch mbps {
	case 10, 100, 1000:
		return true
	case 2500:
		return p.MaxMbps >= 2500
	}
	return false
}

// revision is the PCI revision id: I225 stepping 3 and the I226's first.
func (p Part) revision() uint8 {
	if p.Family == I226 {
		return 0x04
	}
	return 0x03
}
