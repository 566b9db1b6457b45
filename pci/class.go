package pci

// Class codes (PCI Code and ID Assignment Specification, chapter 1): base
// class and subclass, the top 16 bits of Function.Class.
const (
	ClassStorage  = 0x01
	ClassNetwork  = 0x02
	ClassDisplay  = 0x03
	ClassBridge   = 0x06
	ClassSerialIO = 0x0c

	ClassNetworkEthernet = 0x0200
	ClassBridgeHost      = 0x0600
	ClassBridgePCI       = 0x0604
)

var baseClassNames = []string{
	0x00: "unclassified", 0x01: "storage", 0x02: "network", 0x03: "display",
	0x04: "multimedia", 0x05: "memory", 0x06: "bridge", 0x07: "communication",
	0x08: "system", 0x09: "input", 0x0a: "docking", 0x0b: "processor",
	0x0c: "serial-bus", 0x0d: "wireless", 0x0e: "intelligent-io",
	0x0f: "satellite", 0x10: "crypto", 0x11: "signal-processing",
	0x12: "accelerator", 0x13: "instrumentation",
}

var subclassNames = map[uint16]string{
	0x0100: "scsi", 0x0101: "ide", 0x0106: "sata", 0x0107: "sas", 0x0108: "nvme",
	0x0200: "ethernet", 0x0280: "other",
	0x0300: "vga",
	0x0600: "host", 0x0601: "isa", 0x0604: "pci", 0x0607: "cardbus", 0x0680: "other",
	0x0880: "other",
	0x0c03: "usb", 0x0c05: "smbus",
}

// ClassName names a 24-bit class code as "base/subclass" ("network/ethernet"),
// "base/xx" for an unnamed subclass and "class-xx" for an unknown base.
func ClassName(class uint32) string {
	base := int(class >> 16)
	sub := uint16(class >> 8)
	if base >= len(baseClassNames) || baseClassNames[base] == "" {
		if base == 0xff {
			return "unassigned"
		}
		return "class-" + hex2(uint8(base))
	}
	name := baseClassNames[base] + "/"
	if s, ok := subclassNames[sub]; ok {
		return name + s
	}
	return name + hex2(uint8(sub))
}

func hex2(v uint8) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[v>>4], digits[v&0xf]})
}
