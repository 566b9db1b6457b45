package e1000e

import (
	"fmt"
	"testing"

	"github.com/ether9/ether9/drivers/internal/nictest"
)

// FuzzCtl: every ctl command applies or is refused, naming the driver,
// with the registers and the settings as they were.
func FuzzCtl(f *testing.F) {
	r := newRig(f, 0x10D3)
	d := r.d
	nictest.FuzzCtl(f, d, "e1000e ether0", func() string {
		return fmt.Sprintf("mtu %d features %+v copybreak %d mode %v rx %d tx %d tso %d\n%s",
			d.MTU(), d.Features(), d.rx.Copybreak(), d.rx.Mode(), d.rx.Descs.Len(), d.tx.Descs.Len(), d.tsoMode.Load(), r.regs.Snapshot())
	})
}
