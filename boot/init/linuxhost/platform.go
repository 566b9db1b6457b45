//go:build linux

package linuxhost

import (
	"errors"
	"fmt"
	"os"

	"github.com/ether9/ether9/boot/init/system"
	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/iommu"
	"github.com/ether9/ether9/kernel/linux"
	"github.com/ether9/ether9/kernel/metal"
	"github.com/ether9/ether9/pci"
)

// hugePages is how many 2 MiB pages are reserved for rings and page
// tables: a handful is plenty; packet buffers come from the Go heap.
const hugePages = 4

// Platform assembles the Linux-hosted platform: port I/O for config
// space, pinned memory, the DMAR table, register windows and interrupts.
// Its notes go to con.
func Platform(con *Console) (system.Platform, error) {
	if metal.Running() {
		return newMetalPlatform(con)
	}
	p := system.Platform{Name: "linux", Clock: kernel.NewWallClock()}
	if err := linux.EnablePortIO(); err != nil {
		return p, lockdownHint(err)
	}
	ports, err := pci.HostPorts()
	if err != nil {
		return p, err
	}
	p.Config = pci.NewPorts(ports)

	mem, err := linux.NewMemory(linux.MemoryOptions{HugePages: hugePages})
	if err != nil {
		return p, err
	}
	for _, n := range mem.Notes {
		con.Logf("memory: %s", n)
	}
	p.Memory = mem

	dmar, err := os.ReadFile("/sys/firmware/acpi/tables/DMAR")
	switch {
	case errors.Is(err, os.ErrNotExist):
		// No VT-d: the system says so and runs untranslated.
	case err != nil:
		con.Logf("iommu: %v", err)
	default:
		p.DMAR = dmar
	}
	p.MapUnit = func(base uint64) (kernel.Regs, error) { return mapUnit(base, linux.MapPhys) }
	p.MapBAR = func(f *pci.Function, bar int) (kernel.Regs, error) { return linux.MapResource(f.Addr, bar) }
	p.IRQ = (&uioIRQs{con: con}).waiter
	p.SetClock = linux.SetWallClock
	p.KernelStats = linux.KernelStats
	p.Halt = func(reboot bool) error {
		if reboot {
			return linux.Reboot()
		}
		return linux.PowerOff()
	}
	return p, nil
}

// mapUnit maps a VT-d unit's registers. The register set is at least a
// page; the fault recording and IOTLB registers, placed by CAP.FRO and
// ECAP.IRO, may lie beyond it, so the window grows to cover them.
func mapUnit(base uint64, mapPhys func(base uint64, size int) (*linux.MMIO, error)) (kernel.Regs, error) {
	w, err := mapPhys(base, kernel.PageSize)
	if err != nil {
		return nil, err
	}
	caps := iommu.DecodeCaps(w.Read32(0x0), w.Read64(0x8), w.Read64(0x10))
	end := max(int(caps.FRO)+16*caps.NFR, int(caps.IRO)+16)
	if end <= kernel.PageSize {
		return w, nil
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	size := (end + kernel.PageSize - 1) &^ (kernel.PageSize - 1)
	w, err = mapPhys(base, size)
	if err != nil {
		return nil, fmt.Errorf("VT-d registers up to %#x: %w", end, err)
	}
	return w, nil
}
