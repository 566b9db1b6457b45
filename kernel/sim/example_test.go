package sim_test

import (
	"errors"
	"fmt"

	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/vtd"
	"github.com/ether9/ether9/pci"
)

// nic is the smallest device model: a config space and one register.
type nic struct {
	cfg  *sim.ConfigSpace
	ctrl uint32
}

func (n *nic) Config() *sim.ConfigSpace { return n.cfg }
func (n *nic) MMIORead(bar int, off uint32, size int) uint64 {
	if off == 0 {
		return uint64(n.ctrl)
	}
	return 0
}
func (n *nic) MMIOWrite(bar int, off uint32, size int, v uint64) {
	if off == 0 {
		n.ctrl = uint32(v)
	}
}

// A machine with QEMU's VT-d unit and one device: the device reaches
// memory only through its port, which needs bus mastering and, once
// translation is on, a mapping in the tables.
func ExampleMachine() {
	m, err := sim.New(sim.Config{VTd: vtd.QEMU()})
	if err != nil {
		fmt.Println(err)
		return
	}
	a := pci.Addr{Bus: 0, Dev: 2}
	cfg := sim.NewConfigSpace(0x8086, 0x10d3, 0x020000, 0)
	cfg.SetBAR(0, pci.BARMem32, 128<<10, false)
	if err := m.Bus.Add(a, &nic{cfg: cfg}); err != nil {
		fmt.Println(err)
		return
	}
	regs, _ := m.Bus.Regs(a, 0)
	regs.Write32(0, 0x40)
	fmt.Printf("CTRL %#x\n", regs.Read32(0))

	buf, _ := m.Mem.Alloc(4096, 4096)
	port := m.Port(a)
	err = port.Write(uint64(buf.Phys), []byte("hi"))
	fmt.Println("bus master off:", errors.Is(err, sim.ErrBusMasterOff))

	cmd, _ := m.Bus.ReadConfig(a, 4, 2)
	m.Bus.WriteConfig(a, 4, 2, cmd|sim.CmdBusMaster)
	err = port.Write(uint64(buf.Phys), []byte("hi"))
	fmt.Printf("translation off: %v %q\n", err, buf.Buf[:2])
	// Output:
	// CTRL 0x40
	// bus master off: true
	// translation off: <nil> "hi"
}
