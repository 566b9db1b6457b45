package xdp

import (
	"fmt"

	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/m82576"
	"github.com/ether9/ether9/kernel/sim/wire"
	"github.com/ether9/ether9/pci"
)

// plug puts an 82576 model on the machine's bus at a and joins it to the
// wire end port.
func plug(m *sim.Machine, a pci.Addr, port wire.Port) error {
	n, err := m82576.Plug(m, a, m82576.Options{MAC: hostMAC})
	if err != nil {
		return fmt.Errorf("xdp: %w", err)
	}
	n.Attach(port)
	return nil
}
