package bind

import (
	"fmt"
	"strings"

	"github.com/ether9/ether9/ns"
	"github.com/ether9/ether9/pci"
)

// PCI registers /dev/pci/<bus:dev.fn> for every function: ids, class,
// BARs, capabilities and the bound driver.
func PCI(n *ns.Namespace, fns []*pci.Function) error {
	for _, f := range fns {
		f := f
		name := strings.ReplaceAll(f.Addr.String(), "/", "_")
		err := n.Add("/dev/pci/"+name, ns.Text(func() string {
			s := f.Describe() + "\n"
			if f.Driver == "" {
				s += "\tdriver none\n"
			} else {
				s += "\tdriver " + f.Driver + "\n"
			}
			return s
		}))
		if err != nil {
			return fmt.Errorf("bind pci: %w", err)
		}
	}
	return nil
}
