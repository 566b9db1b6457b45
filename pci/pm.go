package pci

import "fmt"

// Power management capability registers (PCI Bus Power Management
// Interface Specification 1.2, 3.2).
const (
	pmCap = 0x02 // 16: PMC
	pmCSR = 0x04 // 16: PMCSR

	pmcVersionMask = 0x7
	pmcD1          = 1 << 9
	pmcD2          = 1 << 10
	pmcPMEShift    = 11
	pmcsrStateMask = 0x3
	pmcsrPMEEnable = 1 << 8
	pmcsrPMEStatus = 1 << 15
)

// PM is a decoded power management capability.
type PM struct {
	Offset    int
	Version   int
	D1, D2    bool
	PMEFrom   uint8 // bit n: PME# can be asserted from Dn (bit 4: D3cold)
	State     int   // current power state, 0 (D0) .. 3 (D3hot)
	PMEEnable bool
	PMEStatus bool
}

// ReadPM decodes the power management capability at off.
func ReadPM(c Config, a Addr, off int) (PM, error) {
	pmc, err := read16(c, a, off+pmCap)
	if err != nil {
		return PM{}, fmt.Errorf("pci %v: pm capabilities at %#x: %w", a, off, err)
	}
	if pmc == 0xffff {
		return PM{}, fmt.Errorf("pci %v: pm capabilities at %#x read all ones: %w", a, off, ErrAbsent)
	}
	csr, err := read16(c, a, off+pmCSR)
	if err != nil {
		return PM{}, fmt.Errorf("pci %v: pm control/status at %#x: %w", a, off, err)
	}
	return PM{
		Offset:    off,
		Version:   int(pmc & pmcVersionMask),
		D1:        pmc&pmcD1 != 0,
		D2:        pmc&pmcD2 != 0,
		PMEFrom:   uint8(pmc >> pmcPMEShift),
		State:     int(csr & pmcsrStateMask),
		PMEEnable: csr&pmcsrPMEEnable != 0,
		PMEStatus: csr&pmcsrPMEStatus != 0,
	}, nil
}

// SetD0 puts the function in D0 if it is in another power state: a NIC
// left in D3hot by firmware decodes no registers. The caller waits the
// 10 ms D3hot->D0 recovery time (PM 1.2, 5.6.1) when the state was D3.
// It returns the state the function was in.
func SetD0(c Config, a Addr, off int) (int, error) {
	csr, err := read16(c, a, off+pmCSR)
	if err != nil {
		return 0, fmt.Errorf("pci %v: pm control/status at %#x: %w", a, off, err)
	}
	prev := int(csr & pmcsrStateMask)
	if prev == 0 {
		return 0, nil
	}
	// Write PME_Status as 0: it is write-one-to-clear.
	v := csr &^ (pmcsrStateMask | pmcsrPMEStatus)
	if err := c.WriteConfig(a, off+pmCSR, 2, uint32(v)); err != nil {
		return prev, fmt.Errorf("pci %v: set D0: %w", a, err)
	}
	return prev, nil
}
