package metal

// LAPIC is the processor's local APIC as the shim runs it.
type LAPIC struct {
	ID uint32 // its APIC id
	// X2APIC: the LAPIC is in x2APIC mode (SDM 11.12), as firmware on
	// many servers hands it over or metal.x2apic asks. A unit remapping
	// interrupts must then run in extended interrupt mode, its entries
	// naming 32-bit x2APIC ids (VT-d 10.4.29, IRTA.EIME).
	X2APIC bool
}

// LocalAPIC says which mode the shim runs the LAPIC in.
func LocalAPIC() (LAPIC, error) {
	r, err := call("local APIC", callLAPIC, 0, 0)
	if err != nil {
		return LAPIC{}, err
	}
	v := uint64(r)
	return LAPIC{ID: uint32(v), X2APIC: v>>32&1 != 0}, nil
}
