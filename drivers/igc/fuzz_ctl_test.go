package igc

import (
	"fmt"
	"testing"

	"github.com/ether9/ether9/drivers/internal/nictest"
)

// FuzzCtl: every ctl command applies or is refused, naming the driver,
// with the registers and the settings as they were.
func FuzzCtl(f *testing.F) {
	r := newRig(f)
	d := r.d
	nictest.FuzzCtl(f, d, "igc ether0", func() string {
		return fmt.Sprintf("mtu %d features %+v build %v rss %v\n%s", d.MTU(), d.Features(), d.build.Load(), d.rss.Load(), r.regs.Snapshot())
	})
}
