package xdp

import (
	"fmt"
	"strings"

	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/m82576"
	"github.com/ether9/ether9/kernel/sim/mi225"
	"github.com/ether9/ether9/kernel/sim/wire"
	"github.com/ether9/ether9/pci"
)

// models are the NICs a rig can be built with, by the driver that binds
// them: the 82576 (igb) and the I225-V (igc).
var models = []struct {
	driver string
	plug   func(m *sim.Machine, a pci.Addr, port wire.Port) error
}{
	{"igb", func(m *sim.Machine, a pci.Addr, port wire.Port) error {
		n, err := m82576.Plug(m, a, m82576.Options{MAC: hostMAC})
		if err != nil {
			return err
		}
		n.Attach(port)
		return nil
	}},
	{"igc", func(m *sim.Machine, a pci.Addr, port wire.Port) error {
		n, err := mi225.Plug(m, a, mi225.Options{MAC: hostMAC})
		if err != nil {
			return err
		}
		n.Attach(port)
		return nil
	}},
}

// NICs lists the drivers a rig can be built for.
func NICs() []string {
	var out []string
	for _, m := range models {
		out = append(out, m.driver)
	}
	return out
}

// plug puts the model the driver named binds on the machine's bus at a and
// joins it to the wire end port; "" is igb.
func plug(driver string, m *sim.Machine, a pci.Addr, port wire.Port) error {
	if driver == "" {
		driver = "igb"
	}
	for _, mo := range models {
		if mo.driver == driver {
			if err := mo.plug(m, a, port); err != nil {
				return fmt.Errorf("xdp: %s model: %w", driver, err)
			}
			return nil
		}
	}
	return fmt.Errorf("xdp: nic %q: want one of %s", driver, strings.Join(NICs(), ", "))
}
