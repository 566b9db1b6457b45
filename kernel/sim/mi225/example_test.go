package mi225_test

import (
	"fmt"

	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/mi225"
	"github.com/ether9/ether9/kernel/sim/nicmodel"
	"github.com/ether9/ether9/kernel/sim/vtd"
	"github.com/ether9/ether9/kernel/sim/wire"
	"github.com/ether9/ether9/pci"
)

// An I226-V on a simulated machine, cabled to a 2.5 Gb/s partner: the
// driver's view of identity and link through config space and BAR0.
func Example() {
	m, err := sim.New(sim.Config{VTd: vtd.QEMU()})
	if err != nil {
		fmt.Println(err)
		return
	}
	at := pci.Addr{Bus: 1}
	nic, err := mi225.Plug(m, at, mi225.Options{Device: 0x125c, DeferRx: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	w, err := wire.New(wire.Options{SpeedMbps: 2500})
	if err != nil {
		fmt.Println(err)
		return
	}
	nic.Attach(w.A())

	id, _ := m.Bus.ReadConfig(at, 0, 4)
	_ = m.Bus.WriteConfig(at, 4, 2, sim.CmdMemory|sim.CmdBusMaster)
	regs, err := m.Bus.Regs(at, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	status := regs.Read32(nicmodel.STATUS)
	fmt.Printf("%04x:%04x %s\n", id&0xffff, id>>16, nic.Part().Name)
	fmt.Println("link up:", status&nicmodel.StatusLU != 0)
	fmt.Println("2.5 Gb/s:", status&mi225.StatusSpeedMask == mi225.StatusSpeed1000 && status&mi225.StatusSpeed2500 != 0)
	// Output:
	// 8086:125c I226-V
	// link up: true
	// 2.5 Gb/s: true
}
