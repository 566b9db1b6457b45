package xdp

import (
	"errors"

	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/wire"
	"github.com/ether9/ether9/pci"
)

// plug puts an 82576 model on the machine's bus at a and joins it to the
// wire end port.
func plug(m *sim.Machine, a pci.Addr, port wire.LinkPort) error {
	return errors.New("xdp: the simulated machine has no 82576 model yet")
}
