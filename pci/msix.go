package pci

import "fmt"

// MSI-X table entry fields (PCI Local Bus Specification 3.0, 6.8.2.6-9):
// message address low and high, message data, vector control.
const (
	msixEntryAddrLow = 0x0
	msixEntryAddrHi  = 0x4
	msixEntryData    = 0x8
	msixEntryCtl     = 0xc

	msixEntryMasked = 1 << 0 // vector control: Mask
)

// Message is one interrupt message: data written to a local APIC's
// address.
type Message struct {
	Addr uint64
	Data uint32
}

// Window is a register window in a BAR, as the MSI-X table is reached:
// one 32-bit load or store per call (kernel.Regs is one).
type Window interface {
	Read32(off uint32) uint32
	Write32(off uint32, v uint32)
}

// Program points the first len(msgs) entries of the function's MSI-X
// table at msgs, unmasked, masks the rest, and enables MSI-X. table is
// the window of BAR TableBIR. MSI is turned off and INTx disabled first:
// a function with MSI-X enabled uses neither. Function Mask is held while
// the entries change, so no half-written message is sent, and cleared
// last. Too many messages for the table is an error, and nothing is
// changed.
func (m MSIX) Program(c Config, a Addr, table Window, msgs []Message) error {
	if len(msgs) > m.TableSize {
		return fmt.Errorf("pci %v: msi-x: %d messages for a table of %d", a, len(msgs), m.TableSize)
	}
	ctl, err := read16(c, a, m.Offset+msixControl)
	if err != nil {
		return fmt.Errorf("pci %v: msi-x: %w", a, err)
	}
	if err := m.disableMSI(c, a); err != nil {
		return err
	}
	if err := DisableINTx(c, a); err != nil {
		return fmt.Errorf("pci %v: msi-x: %w", a, err)
	}
	if err := c.WriteConfig(a, m.Offset+msixControl, 2, uint32(ctl|msixCtlMask)); err != nil {
		return fmt.Errorf("pci %v: msi-x: %w", a, err)
	}
	for i := range m.TableSize {
		e := m.TableOffset + uint32(i)*MSIXEntrySize
		if i >= len(msgs) {
			table.Write32(e+msixEntryCtl, table.Read32(e+msixEntryCtl)|msixEntryMasked)
			continue
		}
		table.Write32(e+msixEntryAddrLow, uint32(msgs[i].Addr))
		table.Write32(e+msixEntryAddrHi, uint32(msgs[i].Addr>>32))
		table.Write32(e+msixEntryData, msgs[i].Data)
		table.Write32(e+msixEntryCtl, table.Read32(e+msixEntryCtl)&^msixEntryMasked)
	}
	ctl = ctl&^msixCtlMask | msixCtlEnable
	if err := c.WriteConfig(a, m.Offset+msixControl, 2, uint32(ctl)); err != nil {
		return fmt.Errorf("pci %v: msi-x: %w", a, err)
	}
	return nil
}

// Disable clears MSI-X Enable: the function signals no more messages.
func (m MSIX) Disable(c Config, a Addr) error {
	ctl, err := read16(c, a, m.Offset+msixControl)
	if err == nil {
		err = c.WriteConfig(a, m.Offset+msixControl, 2, uint32(ctl&^msixCtlEnable))
	}
	if err != nil {
		return fmt.Errorf("pci %v: msi-x: %w", a, err)
	}
	return nil
}

// disableMSI turns off the function's MSI, if it has the capability.
func (m MSIX) disableMSI(c Config, a Addr) error {
	msi, ok, err := FindMSI(c, a)
	if err != nil {
		return fmt.Errorf("pci %v: msi-x: %w", a, err)
	}
	if !ok {
		return nil
	}
	return msi.Disable(c, a)
}
