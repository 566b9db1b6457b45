//go:build linux

package linuxhost

import (
	"sync"

	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/linux"
	"github.com/ether9/ether9/pci"
)

// uioModules are the initramfs's modules (image.Modules under
// image.ModuleDir), in load order.
var uioModules = []string{"/lib/modules/uio.ko", "/lib/modules/uio_pci_generic.ko"}

// uioIRQs hands each NIC its legacy interrupt through uio_pci_generic,
// loading the modules at the first NIC. A NIC that cannot have one gets
// nil, and polls; the reason goes to the console.
type uioIRQs struct {
	con     *Console
	once    sync.Once
	loadErr error
}

func (q *uioIRQs) waiter(a pci.Addr) kernel.Waiter {
	q.once.Do(func() {
		for _, m := range uioModules {
			if err := linux.LoadModule(m); err != nil {
				q.loadErr = err
				return
			}
		}
	})
	if q.loadErr != nil {
		q.con.Logf("irq %v: none (polling): %v", a, q.loadErr)
		return nil
	}
	u, err := linux.BindUIO(a)
	if err != nil {
		q.con.Logf("irq %v: none (polling): %v", a, err)
		return nil
	}
	return u
}
