package igc

import (
	"errors"
	"fmt"
)

// VendorIntel is Intel's PCI vendor id.
const VendorIntel = 0x8086

// MACType is the controller a device id belongs to.
type MACType uint8

const (
	MacI225 MACType = iota + 1 // I225 and its I220/I221 cut-downs
	MacI226
)

func (m MACType) String() string {
	switch m {
	case MacI225:
		return "i225"
	case MacI226:
		return "i226"
	}
	return fmt.Sprintf("mac(%d)", uint8(m))
}

// Flags are per-id properties the driver acts on.
type Flags uint8

const (
	// FlagBlankNVM: the part runs from a blank (unprogrammed) flash and
	// has no MAC address of its own.
	FlagBlankNVM Flags = 1 << iota
)

// ID is one device id the driver claims.
type ID struct {
	Device uint16
	Name   string
	Type   MACType
	Flags  Flags
}

// IDs is every igc device id.
var IDs = []ID{
	{0x15f2, "I225-LM", MacI225, 0},
	{0x15f3, "I225-V", MacI225, 0},
	{0x15f8, "I225-I", MacI225, 0},
	{0x3100, "I225-K", MacI225, 0},
	{0x3101, "I225-K2", MacI225, 0},
	{0x5502, "I225-LMVP", MacI225, 0},
	{0x0d9f, "I225-IT", MacI225, 0},
	{0x15fd, "I225 blank NVM", MacI225, FlagBlankNVM},
	{0x15f7, "I220-V", MacI225, 0},
	{0x125e, "I221-V", MacI225, 0},
	{0x125b, "I226-LM", MacI226, 0},
	{0x125c, "I226-V", MacI226, 0},
	{0x125d, "I226-IT", MacI226, 0},
	{0x3102, "I226-K", MacI226, 0},
	{0x5503, "I226-LMVP", MacI226, 0},
	{0x125f, "I226 blank NVM", MacI226, FlagBlankNVM},
}

// ErrUnknownDevice is returned for ids the driver does not claim.
var ErrUnknownDevice = errors.New("igc: unknown device")

// Lookup finds a device id.
func Lookup(vendor, device uint16) (ID, error) {
	if vendor == VendorIntel {
		for _, id := range IDs {
			if id.Device == device {
				return id, nil
			}
		}
	}
	return ID{}, fmt.Errorf("%w %04x:%04x (not an I225/I226 family id)", ErrUnknownDevice, vendor, device)
}
