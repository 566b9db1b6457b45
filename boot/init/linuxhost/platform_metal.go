//go:build linux

package linuxhost

import (
	"github.com/ether9/ether9/boot/init/system"
	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/iommu"
	"github.com/ether9/ether9/kernel/linux"
	"github.com/ether9/ether9/kernel/metal"
)

// newMetalPlatform assembles the ring-0 platform: /init runs on the shim
// (kernel/metal/shim) with no Linux. Configuration space through ECAM,
// BARs and the VT-d unit through the identity map, DMA memory from the
// shim, and the shim's vectors for each NIC's MSI-X, or where a NIC
// gets no MSI-X vectors its one MSI as its interrupt, all through the
// unit's interrupt remapping where it has it.
func newMetalPlatform(con *Console) (system.Platform, error) {
	p := system.Platform{Name: "metal", Clock: kernel.NewWallClock()}
	cfg, err := metal.Config()
	if err != nil {
		return p, err
	}
	p.Config = cfg
	if p.PCIWindow, err = metal.PCIWindow(); err != nil {
		con.Logf("pci: %v; BARs firmware left unassigned stay so", err)
	}
	mem, err := metal.NewMemory()
	if err != nil {
		return p, err
	}
	p.Memory = mem
	if dmar, err := metal.Table("DMAR"); err != nil {
		con.Logf("iommu: %v", err) // no VT-d: the system says so and runs untranslated
	} else {
		p.DMAR = dmar
	}
	p.MapUnit = func(base uint64) (kernel.Regs, error) { return mapUnit(base, metal.MapPhys) }
	p.MapBAR = metal.MapBAR
	// No INTx routing: a NIC without MSI-X gets its one MSI (probe).
	p.MSI = func() (kernel.MSI, error) { return metal.NewIRQ() }
	// The shim owns the I/O APIC and every vector, so a VT-d unit may
	// remap interrupts: the console's line moves onto an entry too.
	p.RemapInterrupts = true
	// Nothing but firmware ran before the shim: a VT-d unit or a USB
	// controller it left running is ours to take over.
	p.AfterFirmware = true
	if a, err := metal.LocalAPIC(); err != nil {
		con.Logf("metal: %v", err)
	} else {
		p.X2APIC = a.X2APIC
	}
	if l, err := metal.Console(); err == nil {
		addr, data := l.Message()
		p.Lines = append(p.Lines, system.Line{
			Name: "console", IOAPIC: l.IOAPIC,
			Message: iommu.Message{Addr: addr, Data: data},
			Route:   metal.RemapConsole,
		})
	}
	p.KernelStats = func() (string, error) {
		st, err := metal.ShimStats()
		return st.Text(), err
	}
	p.Halt = func(reboot bool) error {
		if reboot {
			return linux.Reboot()
		}
		return linux.PowerOff()
	}
	return p, nil
}
