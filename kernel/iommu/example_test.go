package iommu_test

import (
	"fmt"

	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/acpi"
	"github.com/ether9/ether9/kernel/iommu"
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/vtd"
)

// Bring a unit up from the DMAR table, give a device its domain and map a
// receive buffer for it.
func Example() {
	m := sim.NewMachine(sim.Config{VTd: vtd.QEMU()})
	dmar, err := acpi.ParseDMAR(m.DMAR())
	if err != nil {
		fmt.Println(err)
		return
	}
	drhd, _ := dmar.UnitFor(0, 0, 3, 0)
	fmt.Printf("unit at %#x, host address width %d\n", drhd.Base, dmar.HostAddrWidth)

	u, err := iommu.New(m.VTdRegs(), m.Mem, iommu.Options{Clock: m.Clock})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := u.Enable(); err != nil {
		fmt.Println(err)
		return
	}
	d, err := u.Domain(iommu.SourceID(0, 3, 0))
	if err != nil {
		fmt.Println(err)
		return
	}
	buf := make([]byte, 2048)
	addr, err := d.Map(buf, kernel.FromDevice)
	if err != nil {
		fmt.Println(err)
		return
	}
	_, mapped := d.Translate(addr)
	fmt.Println("mapped:", mapped)
	if err := d.Unmap(addr, len(buf), kernel.FromDevice); err != nil {
		fmt.Println(err)
		return
	}
	s := u.Stats()
	fmt.Printf("levels %d, maps %d, unmaps %d, page invalidations %d\n", u.Levels(), s.Maps, s.Unmaps, s.PageInvalidations)
	// Output:
	// unit at 0xfed90000, host address width 48
	// mapped: true
	// levels 4, maps 1, unmaps 1, page invalidations 1
}
