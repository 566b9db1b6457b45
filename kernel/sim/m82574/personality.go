package m82574

// Personality is what differs between the parts this model plays: PCI
// identity, PHY, NVM access and the link speeds the PHY negotiates. The
// MAC, its rings and its offloads are the same.
type Personality struct {
	Name      string
	Vendor    uint16
	Device    uint16
	SubVendor uint16
	SubDevice uint16
	Revision  uint8

	PHYAddr uint8  // MDIO address of the PHY
	PHYID   uint32 // PHY identifier 1 << 16 | identifier 2

	// EERD reports whether NVM words are readable through EERD. The
	// 82574 reads its SPI EEPROM there; the I219 keeps its NVM in the
	// platform flash (reached through the PCH flash registers, which this
	// model does not provide): software takes the MAC from RAL0/RAH0,
	// which the hardware loads at reset.
	EERD bool
	// Standalone parts have the I/O BAR, the MSI-X BAR and the PCIe
	// capability; the I219 is a PCH-integrated function with none of them.
	Standalone bool

	Speeds []int // Mb/s the PHY can link at
}

// The personalities this model offers.
var (
	// M82574L is the 82574L, the part QEMU's e1000e device emulates.
	M82574L = Personality{
		Name: "82574L", Vendor: 0x8086, Device: 0x10d3,
		SubVendor: 0x8086, SubDevice: 0x0000, Revision: 0x00,
		PHYAddr: 1, PHYID: 0x01410cb1,
		EERD: true, Standalone: true,
		Speeds: []int{10, 100, 1000},
	}
	// I219LM is the I219-LM on a Sunrise Point PCH (the pch_spt MAC type).
	I219LM = Personality{
		Name: "I219-LM", Vendor: 0x8086, Device: 0x156f,
		SubVendor: 0x8086, SubDevice: 0x156f, Revision: 0x21,
		PHYAddr: 2, PHYID: 0x015400a0,
		EERD: false, Standalone: false,
		Speeds: []int{10, 100, 1000},
	}
)

func (p *Personality) supports(mbps int) bool {
	for _, s := range p.Speeds {
		if s == mbps {
			return true
		}
	}
	return false
}
