package pci

import "fmt"

// PCI Express capability registers (PCI Express Base Specification, 7.5.3).
const (
	pcieCaps    = 0x02 // 16: version 3:0, port type 7:4
	pcieDevCap  = 0x04 // 32: max payload supported 2:0
	pcieDevCtl  = 0x08 // 16: max payload 7:5, max read request 14:12
	pcieLinkCap = 0x0c // 32: max speed 3:0, max width 9:4
	pcieLinkSta = 0x12 // 16: current speed 3:0, negotiated width 9:4
)

// PortType is the PCI Express device/port type.
type PortType uint8

const (
	PortEndpoint       PortType = 0x0
	PortLegacyEndpoint PortType = 0x1
	PortRoot           PortType = 0x4
	PortUpstream       PortType = 0x5
	PortDownstream     PortType = 0x6
	PortPCIeToPCI      PortType = 0x7
	PortPCIToPCIe      PortType = 0x8
	PortRCEndpoint     PortType = 0x9
	PortRCEventColl    PortType = 0xa
)

var portTypeNames = map[PortType]string{
	PortEndpoint: "endpoint", PortLegacyEndpoint: "legacy-endpoint", PortRoot: "root-port",
	PortUpstream: "upstream-port", PortDownstream: "downstream-port",
	PortPCIeToPCI: "pcie-to-pci", PortPCIToPCIe: "pci-to-pcie",
	PortRCEndpoint: "rc-endpoint", PortRCEventColl: "rc-event-collector",
}

func (t PortType) String() string {
	if s, ok := portTypeNames[t]; ok {
		return s
	}
	return fmt.Sprintf("porttype(%#x)", uint8(t))
}

// PCIe is a decoded PCI Express capability.
type PCIe struct {
	Offset     int
	Version    int
	Type       PortType
	MaxPayload int // bytes the function supports
	Payload    int // bytes programmed in device control
	MaxReadReq int // bytes programmed in device control
	LinkSpeed  int // maximum, as a generation: 1 = 2.5 GT/s, 2 = 5, 3 = 8 ...
	LinkWidth  int // maximum lanes
	CurSpeed   int // current generation (0 when the link is down)
	CurWidth   int // negotiated lanes
}

// ReadPCIe decodes the PCI Express capability at off.
func ReadPCIe(c Config, a Addr, off int) (PCIe, error) {
	wrap := func(reg string, err error) error {
		return fmt.Errorf("pci %v: pcie %s at %#x: %w", a, reg, off, err)
	}
	caps, err := read16(c, a, off+pcieCaps)
	if err != nil {
		return PCIe{}, wrap("capabilities", err)
	}
	if caps == 0xffff {
		return PCIe{}, wrap("capabilities", fmt.Errorf("all ones: %w", ErrAbsent))
	}
	devCap, err := read32(c, a, off+pcieDevCap)
	if err != nil {
		return PCIe{}, wrap("device capabilities", err)
	}
	devCtl, err := read16(c, a, off+pcieDevCtl)
	if err != nil {
		return PCIe{}, wrap("device control", err)
	}
	linkCap, err := read32(c, a, off+pcieLinkCap)
	if err != nil {
		return PCIe{}, wrap("link capabilities", err)
	}
	linkSta, err := read16(c, a, off+pcieLinkSta)
	if err != nil {
		return PCIe{}, wrap("link status", err)
	}
	return PCIe{
		Offset:     off,
		Version:    int(caps & 0xf),
		Type:       PortType(caps >> 4 & 0xf),
		MaxPayload: 128 << (devCap & 0x7),
		Payload:    128 << (devCtl >> 5 & 0x7),
		MaxReadReq: 128 << (devCtl >> 12 & 0x7),
		LinkSpeed:  int(linkCap & 0xf),
		LinkWidth:  int(linkCap >> 4 & 0x3f),
		CurSpeed:   int(linkSta & 0xf),
		CurWidth:   int(linkSta >> 4 & 0x3f),
	}, nil
}
