//go:build linux

package linuxhost

import (
	"github.com/ether9/ether9/boot/init/system"
	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/linux"
	"github.com/ether9/ether9/kernel/metal"
	"github.com/ether9/ether9/pci"
)

// newMetalPlatform assembles the ring-0 platform: /init runs on the shim
// (kernel/metal/shim) with no Linux. Configuration space through ECAM,
// BARs and the VT-d unit through the identity map, DMA memory from the
// shim, and the shim's vectors for each NIC's MSI-X, or where a NIC
// gets no MSI-X vectors its one MSI as its interrupt.
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
	p.IRQ = func(a pci.Addr) kernel.Waiter { return msiWaiter(con, cfg, a) }
	p.MSI = func() (kernel.MSI, error) { return metal.NewIRQ() }
	p.Halt = func(reboot bool) error {
		if reboot {
			return linux.Reboot()
		}
		return linux.PowerOff()
	}
	return p, nil
}

// msiWaiter points the function's MSI at a vector of the shim; nil (the
// NIC polls) when it has no MSI or no vector is free.
func msiWaiter(con *Console, cfg pci.Config, a pci.Addr) kernel.Waiter {
	caps, err := pci.Capabilities(cfg, a)
	if err != nil {
		con.Logf("irq %v: none (polling): %v", a, err)
		return nil
	}
	c, ok := pci.FindCap(caps, pci.CapMSI)
	if !ok {
		con.Logf("irq %v: none (polling): no MSI capability", a)
		return nil
	}
	m, err := pci.ReadMSI(cfg, a, c.Offset)
	if err != nil {
		con.Logf("irq %v: none (polling): %v", a, err)
		return nil
	}
	q, err := metal.NewIRQ()
	if err != nil {
		con.Logf("irq %v: none (polling): %v", a, err)
		return nil
	}
	if err := m.Program(cfg, a, q.MSIAddress(), q.MSIData()); err != nil {
		q.Close()
		con.Logf("irq %v: none (polling): %v", a, err)
		return nil
	}
	con.Logf("irq %v: MSI on vector %d", a, q.Vector())
	return q
}
