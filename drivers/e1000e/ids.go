package e1000e

import (
	"fmt"
	"slices"
)

// MACType is the controller family a device id belongs to; it decides the
// NVM access, reset waits, frame size limits and quirks.
type MACType uint8

const (
	Mac82571 MACType = iota + 1
	Mac82572
	Mac82573
	Mac82574
	Mac82583
	Mac80003es2lan
	MacICH8
	MacICH9
	MacICH10
	MacPCH    // 82577/82578 on Ibex Peak
	MacPCH2   // 82579 on Cougar Point
	MacPCHLPT // I217/I218 on Lynx Point
	MacPCHSPT // I219 on Sunrise Point / Lewisburg
	MacPCHCNP // I219 on Cannon Lake / Ice Lake / Comet Lake
	MacPCHTGP // Tiger Lake
	MacPCHADP // Alder Lake / Raptor Lake
	MacPCHMTP // Meteor Lake
	MacPCHLNP // Lunar Lake / Arrow Lake
	MacPCHPTP // Panther Lake / Nova Lake
)

var macNames = map[MACType]string{
	Mac82571: "82571", Mac82572: "82572", Mac82573: "82573", Mac82574: "82574",
	Mac82583: "82583", Mac80003es2lan: "80003es2lan", MacICH8: "ich8", MacICH9: "ich9",
	MacICH10: "ich10", MacPCH: "pchlan", MacPCH2: "pch2lan", MacPCHLPT: "pch_lpt",
	MacPCHSPT: "pch_spt", MacPCHCNP: "pch_cnp", MacPCHTGP: "pch_tgp", MacPCHADP: "pch_adp",
	MacPCHMTP: "pch_mtp", MacPCHLNP: "pch_lnp", MacPCHPTP: "pch_ptp",
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
	FlagEERD       Flags = 1 << iota // NVM words readable through EERD (no flash)
	FlagPCH                          // PCH-integrated MAC: MAC address loaded from flash by hardware
	FlagLANInit                      // wait for STATUS.LAN_INIT_DONE after reset
	FlagJumbo                        // jumbo frames supported
	FlagMSIX                         // MSI-X capable (82574)
	FlagNoTSO                        // never use TSO (pch_spt: speed loss)
	FlagTSOFast                      // TSO only at 1000 Mb/s unless forced
	FlagManageable                   // may have firmware sharing the port (AMT/ME)
	FlagDualPort                     // two ports share one NVM address: port 1 flips the last bit
)

// MACInfo is everything the driver knows about a MAC type.
type MACInfo struct {
	Type     MACType
	Flags    Flags
	MaxFrame int // largest frame, Ethernet header to FCS
}

const (
	frameStd   = 1518
	frameJumbo = 9018
	framePCH   = 4096
)

var macInfo = map[MACType]MACInfo{
	Mac82571:       {Mac82571, FlagEERD | FlagJumbo | FlagTSOFast | FlagDualPort, frameJumbo},
	Mac82572:       {Mac82572, FlagEERD | FlagJumbo | FlagTSOFast, frameJumbo},
	Mac82573:       {Mac82573, FlagEERD | FlagManageable | FlagTSOFast, frameStd},
	Mac82574:       {Mac82574, FlagEERD | FlagJumbo | FlagMSIX | FlagManageable | FlagTSOFast, frameJumbo},
	Mac82583:       {Mac82583, FlagEERD | FlagTSOFast, frameStd},
	Mac80003es2lan: {Mac80003es2lan, FlagEERD | FlagJumbo | FlagTSOFast | FlagDualPort, frameJumbo},
	MacICH8:        {MacICH8, FlagManageable | FlagTSOFast, frameStd},
	MacICH9:        {MacICH9, FlagJumbo | FlagManageable | FlagTSOFast, frameJumbo},
	MacICH10:       {MacICH10, FlagJumbo | FlagManageable | FlagTSOFast, frameJumbo},
	MacPCH:         {MacPCH, FlagPCH | FlagLANInit | FlagJumbo | FlagManageable | FlagTSOFast, framePCH},
	MacPCH2:        {MacPCH2, FlagPCH | FlagLANInit | FlagJumbo | FlagManageable | FlagTSOFast, frameJumbo},
	MacPCHLPT:      {MacPCHLPT, FlagPCH | FlagLANInit | FlagJumbo | FlagManageable | FlagTSOFast, frameJumbo},
	MacPCHSPT:      {MacPCHSPT, FlagPCH | FlagLANInit | FlagJumbo | FlagManageable | FlagNoTSO, frameJumbo},
	MacPCHCNP:      {MacPCHCNP, FlagPCH | FlagLANInit | FlagJumbo | FlagManageable | FlagTSOFast, frameJumbo},
	MacPCHTGP:      {MacPCHTGP, FlagPCH | FlagLANInit | FlagJumbo | FlagManageable | FlagTSOFast, frameJumbo},
	MacPCHADP:      {MacPCHADP, FlagPCH | FlagLANInit | FlagJumbo | FlagManageable | FlagTSOFast, frameJumbo},
	MacPCHMTP:      {MacPCHMTP, FlagPCH | FlagLANInit | FlagJumbo | FlagManageable | FlagTSOFast, frameJumbo},
	MacPCHLNP:      {MacPCHLNP, FlagPCH | FlagLANInit | FlagJumbo | FlagManageable | FlagTSOFast, frameJumbo},
	MacPCHPTP:      {MacPCHPTP, FlagPCH | FlagLANInit | FlagJumbo | FlagManageable | FlagTSOFast, frameJumbo},
}

// VendorIntel is the only vendor of the family.
const VendorIntel = 0x8086

// ID is one supported device id.
type ID struct {
	Device uint16
	Type   MACType
	Name   string
}

// IDs lists every device the e1000e family covers.
var IDs = []ID{
	{0x105E, Mac82571, "82571EB Copper"},
	{0x105F, Mac82571, "82571EB Fiber"},
	{0x1060, Mac82571, "82571EB SerDes"},
	{0x10A4, Mac82571, "82571EB Quad Copper"},
	{0x10A5, Mac82571, "82571EB Quad Fiber"},
	{0x10BC, Mac82571, "82571EB Quad Copper LP"},
	{0x10D9, Mac82571, "82571EB SerDes Dual"},
	{0x10DA, Mac82571, "82571EB SerDes Quad"},
	{0x10D5, Mac82571, "82571PT Quad Copper"},

	{0x107D, Mac82572, "82572EI Copper"},
	{0x107E, Mac82572, "82572EI Fiber"},
	{0x107F, Mac82572, "82572EI SerDes"},
	{0x10B9, Mac82572, "82572EI"},

	{0x108B, Mac82573, "82573E"},
	{0x108C, Mac82573, "82573E IAMT"},
	{0x109A, Mac82573, "82573L"},

	{0x10D3, Mac82574, "82574L"},
	{0x10F6, Mac82574, "82574LA"},
	{0x150C, Mac82583, "82583V"},

	{0x1096, Mac80003es2lan, "80003ES2LAN Copper DPT"},
	{0x1098, Mac80003es2lan, "80003ES2LAN SerDes DPT"},
	{0x10BA, Mac80003es2lan, "80003ES2LAN Copper SPT"},
	{0x10BB, Mac80003es2lan, "80003ES2LAN SerDes SPT"},

	{0x1049, MacICH8, "ICH8 IGP M AMT"},
	{0x104A, MacICH8, "ICH8 IGP AMT"},
	{0x104B, MacICH8, "ICH8 IGP C"},
	{0x104C, MacICH8, "ICH8 IFE"},
	{0x104D, MacICH8, "ICH8 IGP M"},
	{0x10C4, MacICH8, "ICH8 IFE GT"},
	{0x10C5, MacICH8, "ICH8 IFE G"},
	{0x1501, MacICH8, "ICH8 82567V-3"},

	{0x10BD, MacICH9, "ICH9 IGP AMT"},
	{0x294C, MacICH9, "ICH9 IGP C"},
	{0x10BF, MacICH9, "ICH9 IGP M"},
	{0x10CB, MacICH9, "ICH9 IGP M V"},
	{0x10F5, MacICH9, "ICH9 IGP M AMT"},
	{0x10C0, MacICH9, "ICH9 IFE"},
	{0x10C2, MacICH9, "ICH9 IFE G"},
	{0x10C3, MacICH9, "ICH9 IFE GT"},
	{0x10E5, MacICH9, "ICH9 BM"},
	// ICH10 R parts use the ICH9 MAC.
	{0x10CC, MacICH9, "ICH10 R BM LM"},
	{0x10CD, MacICH9, "ICH10 R BM LF"},
	{0x10CE, MacICH9, "ICH10 R BM V"},

	{0x10DE, MacICH10, "ICH10 D BM LM"},
	{0x10DF, MacICH10, "ICH10 D BM LF"},
	{0x1525, MacICH10, "ICH10 D BM V"},

	{0x10EA, MacPCH, "PCH M HV LM (82577LM)"},
	{0x10EB, MacPCH, "PCH M HV LC (82577LC)"},
	{0x10EF, MacPCH, "PCH D HV DM (82578DM)"},
	{0x10F0, MacPCH, "PCH D HV DC (82578DC)"},

	{0x1502, MacPCH2, "82579LM"},
	{0x1503, MacPCH2, "82579V"},

	{0x153A, MacPCHLPT, "I217-LM"},
	{0x153B, MacPCHLPT, "I217-V"},
	{0x155A, MacPCHLPT, "I218-LM"},
	{0x1559, MacPCHLPT, "I218-V"},
	{0x15A0, MacPCHLPT, "I218-LM (2)"},
	{0x15A1, MacPCHLPT, "I218-V (2)"},
	{0x15A2, MacPCHLPT, "I218-LM (3)"},
	{0x15A3, MacPCHLPT, "I218-V (3)"},

	{0x156F, MacPCHSPT, "I219-LM"},
	{0x1570, MacPCHSPT, "I219-V"},
	{0x15B7, MacPCHSPT, "I219-LM (2)"},
	{0x15B8, MacPCHSPT, "I219-V (2)"},
	{0x15B9, MacPCHSPT, "I219-LM (3) LBG"},
	{0x15D7, MacPCHSPT, "I219-LM (4)"},
	{0x15D8, MacPCHSPT, "I219-V (4)"},
	{0x15E3, MacPCHSPT, "I219-LM (5)"},
	{0x15D6, MacPCHSPT, "I219-V (5)"},

	{0x15BD, MacPCHCNP, "I219-LM (6)"},
	{0x15BE, MacPCHCNP, "I219-V (6)"},
	{0x15BB, MacPCHCNP, "I219-LM (7)"},
	{0x15BC, MacPCHCNP, "I219-V (7)"},
	{0x15DF, MacPCHCNP, "I219-LM (8) ICP"},
	{0x15E0, MacPCHCNP, "I219-V (8) ICP"},
	{0x15E1, MacPCHCNP, "I219-LM (9) ICP"},
	{0x15E2, MacPCHCNP, "I219-V (9) ICP"},
	{0x0D4E, MacPCHCNP, "I219-LM (10) CMP"},
	{0x0D4F, MacPCHCNP, "I219-V (10) CMP"},
	{0x0D4C, MacPCHCNP, "I219-LM (11) CMP"},
	{0x0D4D, MacPCHCNP, "I219-V (11) CMP"},
	// Comet Lake PCH-V parts carry the Sunrise Point MAC.
	{0x0D53, MacPCHSPT, "I219-LM (12) CMP"},
	{0x0D55, MacPCHSPT, "I219-V (12) CMP"},

	{0x15FB, MacPCHTGP, "I219-LM (13)"},
	{0x15FC, MacPCHTGP, "I219-V (13)"},
	{0x15F9, MacPCHTGP, "I219-LM (14)"},
	{0x15FA, MacPCHTGP, "I219-V (14)"},
	{0x15F4, MacPCHTGP, "I219-LM (15)"},
	{0x15F5, MacPCHTGP, "I219-V (15)"},

	{0x1A1E, MacPCHADP, "I219-LM (16)"},
	{0x1A1F, MacPCHADP, "I219-V (16)"},
	{0x1A1C, MacPCHADP, "I219-LM (17)"},
	{0x1A1D, MacPCHADP, "I219-V (17)"},
	{0x550C, MacPCHADP, "I219-LM (19)"},
	{0x550D, MacPCHADP, "I219-V (19)"},
	{0x0DC7, MacPCHADP, "I219-LM (22) RPL"},
	{0x0DC8, MacPCHADP, "I219-V (22) RPL"},
	{0x0DC5, MacPCHADP, "I219-LM (23) RPL"},
	{0x0DC6, MacPCHADP, "I219-V (23) RPL"},

	{0x550A, MacPCHMTP, "I219-LM (18)"},
	{0x550B, MacPCHMTP, "I219-V (18)"},

	{0x550E, MacPCHLNP, "I219-LM (20)"},
	{0x550F, MacPCHLNP, "I219-V (20)"},
	{0x5510, MacPCHLNP, "I219-LM (21)"},
	{0x5511, MacPCHLNP, "I219-V (21)"},
	{0x57A0, MacPCHLNP, "I219-LM (24) ARL"},
	{0x57A1, MacPCHLNP, "I219-V (24) ARL"},

	{0x57B3, MacPCHPTP, "I219-LM (25)"},
	{0x57B4, MacPCHPTP, "I219-V (25)"},
	{0x57B5, MacPCHPTP, "I219-LM (26)"},
	{0x57B6, MacPCHPTP, "I219-V (26)"},
	{0x57B7, MacPCHPTP, "I219-LM (27)"},
	{0x57B8, MacPCHPTP, "I219-V (27)"},
	{0x57B9, MacPCHPTP, "I219-LM (29) NVL"},
	{0x57BA, MacPCHPTP, "I219-V (29) NVL"},
}

// Lookup returns the id entry and MAC information for a vendor/device
// pair, or an error naming the pair.
func Lookup(vendor, device uint16) (ID, MACInfo, error) {
	if vendor != VendorIntel {
		return ID{}, MACInfo{}, fmt.Errorf("e1000e: vendor %04x is not Intel", vendor)
	}
	// A scan, once per probe: an index built at init would cost every
	// boot its map, for one lookup.
	i := slices.IndexFunc(IDs, func(id ID) bool { return id.Device == device })
	if i < 0 {
		return ID{}, MACInfo{}, fmt.Errorf("e1000e: device %04x:%04x is not in the e1000e id table", vendor, device)
	}
	id := IDs[i]
	return id, macInfo[id.Type], nil
}

// Supports reports whether the driver handles vendor:device.
func Supports(vendor, device uint16) bool {
	_, _, err := Lookup(vendor, device)
	return err == nil
}
