package pci

import (
	"errors"
	"fmt"
)

// Walk limits: a standard list lives in 0x40-0xff with entries at least 4
// bytes apart, an extended list in 0x100-0xfff.
const (
	maxCaps    = (ConfigSize - 0x40) / 4
	maxExtCaps = (ExtConfigSize - RegExtCapStart) / 4
)

// Capabilities walks the capability list of the function at a and, when the
// function is PCI Express and the accessor reaches offset 0x100, the
// extended capability list. A list that loops or points outside its space
// ends the walk with an error; the entries read so far are returned.
func Capabilities(c Config, a Addr) ([]Capability, error) {
	caps, err := standardCaps(c, a)
	if err != nil {
		return caps, err
	}
	if _, ok := FindCap(caps, CapPCIe); !ok {
		return caps, nil
	}
	ext, err := extendedCaps(c, a)
	return append(caps, ext...), err
}

func standardCaps(c Config, a Addr) ([]Capability, error) {
	st, err := read16(c, a, RegStatus)
	if err != nil {
		return nil, fmt.Errorf("pci %v: status: %w", a, err)
	}
	if st&StatusCapList == 0 {
		return nil, nil
	}
	ht, err := read8(c, a, RegHeaderType)
	if err != nil {
		return nil, fmt.Errorf("pci %v: header type: %w", a, err)
	}
	ptrReg := RegCapPtr
	if ht&HeaderTypeMask == HeaderCardBus {
		ptrReg = RegCardBusCapPtr
	}
	p, err := read8(c, a, ptrReg)
	if err != nil {
		return nil, fmt.Errorf("pci %v: capability pointer: %w", a, err)
	}
	var caps []Capability
	seen := make(map[int]bool)
	for ptr := int(p) &^ 3; ptr != 0; {
		if ptr < 0x40 {
			return caps, fmt.Errorf("pci %v: capability pointer %#x inside the header", a, ptr)
		}
		if seen[ptr] || len(caps) >= maxCaps {
			return caps, fmt.Errorf("pci %v: capability list loops at %#x", a, ptr)
		}
		seen[ptr] = true
		h, err := read16(c, a, ptr)
		if err != nil {
			return caps, fmt.Errorf("pci %v: capability at %#x: %w", a, ptr, err)
		}
		if h == 0xffff {
			return caps, fmt.Errorf("pci %v: capability at %#x reads all ones: %w", a, ptr, ErrAbsent)
		}
		caps = append(caps, Capability{ID: h & 0xff, Offset: ptr})
		ptr = int(h>>8) &^ 3
	}
	return caps, nil
}

func extendedCaps(c Config, a Addr) ([]Capability, error) {
	var caps []Capability
	seen := make(map[int]bool)
	for ptr := RegExtCapStart; ptr != 0; {
		if ptr < RegExtCapStart {
			return caps, fmt.Errorf("pci %v: extended capability pointer %#x below 0x100", a, ptr)
		}
		if seen[ptr] || len(caps) >= maxExtCaps {
			return caps, fmt.Errorf("pci %v: extended capability list loops at %#x", a, ptr)
		}
		seen[ptr] = true
		h, err := read32(c, a, ptr)
		if ptr == RegExtCapStart && errors.Is(err, ErrOutOfRange) {
			return nil, nil // the accessor cannot reach extended space
		}
		if err != nil {
			return caps, fmt.Errorf("pci %v: extended capability at %#x: %w", a, ptr, err)
		}
		if h == 0 || h == 0xffffffff {
			if ptr == RegExtCapStart {
				return nil, nil // no extended capabilities
			}
			return caps, fmt.Errorf("pci %v: extended capability at %#x reads %#x", a, ptr, h)
		}
		// An id of 0 is a placeholder whose next pointer still counts.
		if id := uint16(h); id != 0 {
			caps = append(caps, Capability{ID: id, Offset: ptr, Extended: true})
		}
		ptr = int(h>>20) &^ 3
	}
	return caps, nil
}

// FindCap returns the first standard capability id in caps.
func FindCap(caps []Capability, id uint16) (Capability, bool) {
	for _, c := range caps {
		if !c.Extended && c.ID == id {
			return c, true
		}
	}
	return Capability{}, false
}

// FindExtCap returns the first extended capability id in caps.
func FindExtCap(caps []Capability, id uint16) (Capability, bool) {
	for _, c := range caps {
		if c.Extended && c.ID == id {
			return c, true
		}
	}
	return Capability{}, false
}

var capNames = map[uint16]string{
	CapPM: "pm", CapAGP: "agp", CapVPD: "vpd", CapSlotID: "slotid", CapMSI: "msi",
	CapHotSwap: "hotswap", CapPCIX: "pcix", CapHT: "ht", CapVendor: "vendor",
	CapDebug: "debug", CapSSVID: "ssvid", CapPCIe: "pcie", CapMSIX: "msix",
	CapSATA: "sata", CapAF: "af", CapEnhAlloc: "ea",
}

var extCapNames = map[uint16]string{
	ExtCapAER: "aer", ExtCapVC: "vc", ExtCapDSN: "dsn", ExtCapPower: "power",
	ExtCapVendor: "vsec", ExtCapACS: "acs", ExtCapARI: "ari", ExtCapATS: "ats",
	ExtCapSRIOV: "sriov", ExtCapLTR: "ltr", ExtCapSecPCI: "secpci",
	ExtCapL1SS: "l1ss", ExtCapPTM: "ptm",
}

// String names the capability and its offset: "msix@a0", "aer@100".
func (c Capability) String() string {
	names := capNames
	if c.Extended {
		names = extCapNames
	}
	name, ok := names[c.ID]
	if !ok {
		if c.Extended {
			name = fmt.Sprintf("ext%04x", c.ID)
		} else {
			name = fmt.Sprintf("cap%02x", c.ID)
		}
	}
	return fmt.Sprintf("%s@%x", name, c.Offset)
}
