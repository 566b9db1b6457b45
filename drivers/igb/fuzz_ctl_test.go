package igb

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ether9/ether9/drivers/internal/nictest"
)

// FuzzCtl: every ctl command applies or is refused, naming the driver,
// with the registers and the settings as they were.
func FuzzCtl(f *testing.F) {
	r := newRig(f)
	d := r.d
	nictest.FuzzCtl(f, d, "igb ether0", func() string {
		var b strings.Builder
		fmt.Fprintf(&b, "mtu %d features %+v\n", d.MTU(), d.Features())
		for i, q := range d.queues {
			fmt.Fprintf(&b, "queue %d copybreak %d\n", i, q.rx.Copybreak())
		}
		return b.String() + r.regs.Snapshot()
	})
}
