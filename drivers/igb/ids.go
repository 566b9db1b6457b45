package igb

import "fmt"

// VendorIntel is Intel's PCI vendor id.
const VendorIntel = 0x8086

// MACType is the controller family a device id belongs to.
type MACType uint8

const (
	Mac82575 MACType = iota + 1
	Mac82576
	Mac82580 // also the DH89xxCC (Cave Creek) LAN ports
	MacI350
	MacI354
	MacI210
	MacI211
)

var macNames = map[MACType]string{
	Mac82575: "82575", Mac82576: "82576", Mac82580: "82580", MacI350: "i350",
	MacI354: "i354", MacI210: "i210", MacI211: "i211",
}

func (m MACType) String() string {
	if s, ok := macNames[m]; ok {
		return s
	}
	return fmt.Sprintf("mac(%d)", uint8(m))
}

// Flags are per-MAC-type properties the driver acts on.
type Flags uint32

const (
	FlagPortXOR    Flags = 1 << iota // port 1's MAC is port 0's with the last bit flipped (shared NVM)
	FlagLANFuncNVM                   // each port has its own NVM section (0x40 words apart)
	FlagRETAShift6                   // RETA entries hold the queue in bits 7:6 (82575)
	FlagETQF                         // EtherType queue filters
	FlagPortFilter                   // L4 destination-port queue filters (82576: 5-tuple FTQF; later: 2-tuple TTQF)
	FlagFlashless                    // may run with no NVM: the MAC comes from iNVM or RAL/RAH
	FlagNoRSS                        // one receive queue only (i211 keeps RSS off)
)

// MACInfo is everything the driver knows about a MAC type.
type MACInfo struct {
	Type     MACType
	Flags    Flags
	Queues   int // RX/TX queue pairs
	MaxFrame int // largest frame, Ethernet header to FCS
}

var macInfo = map[MACType]MACInfo{
	Mac82575: {Mac82575, FlagPortXOR | FlagRETAShift6, 4, 9234},
	Mac82576: {Mac82576, FlagPortXOR | FlagETQF | FlagPortFilter, 16, 9234},
	Mac82580: {Mac82580, FlagLANFuncNVM | FlagETQF | FlagPortFilter, 8, 9234},
	MacI350:  {MacI350, FlagLANFuncNVM | FlagETQF | FlagPortFilter, 8, 9234},
	MacI354:  {MacI354, FlagLANFuncNVM | FlagETQF | FlagPortFilter, 8, 9234},
	MacI210:  {MacI210, FlagETQF | FlagPortFilter | FlagFlashless, 4, 9234},
	MacI211:  {MacI211, FlagETQF | FlagFlashless | FlagNoRSS, 2, 9234},
}

// ID is one PCI device id the driver claims.
type ID struct {
	Device uint16
	Type   MACType
	Name   string
}

// IDs is the driver's PCI id table (physical functions only).
var IDs = []ID{
	{0x10a7, Mac82575, "82575EB copper"},
	{0x10a9, Mac82575, "82575EB fiber/serdes"},
	{0x10d6, Mac82575, "82575GB quad copper"},

	{0x10c9, Mac82576, "82576"},
	{0x10e6, Mac82576, "82576 fiber"},
	{0x10e7, Mac82576, "82576 serdes"},
	{0x10e8, Mac82576, "82576 quad copper"},
	{0x1526, Mac82576, "82576 quad copper ET2"},
	{0x150a, Mac82576, "82576NS"},
	{0x1518, Mac82576, "82576NS serdes"},
	{0x150d, Mac82576, "82576 serdes quad"},

	{0x150e, Mac82580, "82580 copper"},
	{0x150f, Mac82580, "82580 fiber"},
	{0x1510, Mac82580, "82580 serdes"},
	{0x1511, Mac82580, "82580 sgmii"},
	{0x1516, Mac82580, "82580 copper dual"},
	{0x1527, Mac82580, "82580 quad fiber"},

	{0x0438, Mac82580, "DH89xxCC sgmii"},
	{0x043a, Mac82580, "DH89xxCC serdes"},
	{0x043c, Mac82580, "DH89xxCC backplane"},
	{0x0440, Mac82580, "DH89xxCC sfp"},

	{0x1521, MacI350, "I350 copper"},
	{0x1522, MacI350, "I350 fiber"},
	{0x1523, MacI350, "I350 serdes"},
	{0x1524, MacI350, "I350 sgmii"},

	{0x1f40, MacI354, "I354 backplane 1 Gb/s"},
	{0x1f41, MacI354, "I354 sgmii"},
	{0x1f45, MacI354, "I354 backplane 2.5 Gb/s"},

	{0x1533, MacI210, "I210 copper"},
	{0x1534, MacI210, "I210 copper OEM1"},
	{0x1535, MacI210, "I210 copper IT"},
	{0x1536, MacI210, "I210 fiber"},
	{0x1537, MacI210, "I210 serdes"},
	{0x1538, MacI210, "I210 sgmii"},
	{0x157b, MacI210, "I210 copper flashless"},
	{0x157c, MacI210, "I210 serdes flashless"},

	{0x1539, MacI211, "I211 copper"},
}

// Lookup finds a device id and its MAC type's properties.
func Lookup(vendor, device uint16) (ID, MACInfo, error) {
	if vendor != VendorIntel {
		return ID{}, MACInfo{}, fmt.Errorf("igb: vendor %04x is not Intel", vendor)
	}
	for _, id := range IDs {
		if id.Device == device {
			info, ok := macInfo[id.Type]
			if !ok {
				return ID{}, MACInfo{}, fmt.Errorf("igb: device %04x: no properties for MAC type %v", device, id.Type)
			}
			return id, info, nil
		}
	}
	return ID{}, MACInfo{}, fmt.Errorf("igb: device %04x:%04x not supported", vendor, device)
}
