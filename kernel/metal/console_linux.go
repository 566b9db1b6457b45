package metal

import "fmt"

// ConsoleLine is how the console's interrupt (COM1's input, through the
// I/O APIC) reaches the processor: the one interrupt of the shim's own
// that a VT-d unit remapping interrupts would otherwise block.
type ConsoleLine struct {
	IOAPIC uint8 // the I/O APIC's id, as the DMAR's device scope names it
	GSI    uint32
	APIC   uint8 // destination local APIC id
	Vector uint8
}

// Message is the line's interrupt as the I/O APIC sends it today, in
// compatibility format: the destination's address, the vector in the
// data, fixed delivery, edge-triggered (SDM vol. 3, 11.11).
func (l ConsoleLine) Message() (addr uint64, data uint32) {
	return 0xfee00000 | uint64(l.APIC)<<12, uint32(l.Vector)
}

// Console reads the console's line; an error when the shim polls COM1
// (no I/O APIC), so there is no line to remap.
func Console() (ConsoleLine, error) {
	r, err := call("console line", callConsoleLine, 0, 0)
	if err != nil {
		return ConsoleLine{}, err
	}
	v := uint64(r)
	return ConsoleLine{IOAPIC: uint8(v >> 40), GSI: uint32(v >> 32 & 0xff), APIC: uint8(v >> 8), Vector: uint8(v)}, nil
}

// RemapConsole has the I/O APIC send the console's interrupt in
// remappable format, naming entry of the interrupt remapping table.
func RemapConsole(entry uint16) error {
	if _, err := call("console remap", callConsoleRemap, uintptr(entry), 0); err != nil {
		return fmt.Errorf("metal: console line onto remapping entry %d: %w", entry, err)
	}
	return nil
}
