package iommu

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ether9/ether9/kernel"
)

// FuzzCtl: every command to a unit's ctl applies or is refused with an
// error that says iommu, and a refused one leaves the mode, the batch,
// the counters and the faults as they were. Each input first leaves an
// unmap pending, so flush and strict have work.
func FuzzCtl(f *testing.F) {
	for _, s := range []string{"", "strict", "deferred", "deferred 16", "lazy 3", "deferred 0", "deferred -1",
		"deferred 1 2", "strict 5", "flush", "flush now", "clearfaults", "frob", "deferred 99999999999999999999", "deferred\x0016"} {
		f.Add(s)
	}
	r := qemuRig(f)
	d := r.domain(devA)
	buf := make([]byte, kernel.PageSize)
	state := func() string {
		m, batch := r.u.Mode()
		return fmt.Sprintf("%v %d faults %d\n%s", m, batch, len(r.u.Faults()), r.u.Stats())
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		a, err := d.Map(buf, kernel.FromDevice)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Unmap(a, len(buf), kernel.FromDevice); err != nil {
			t.Fatal(err)
		}
		before := state()
		err = r.u.Ctl(cmd)
		if err == nil {
			return
		}
		if !strings.HasPrefix(err.Error(), "iommu") {
			t.Fatalf("ctl %q: error %q does not say iommu", cmd, err)
		}
		if after := state(); after != before {
			t.Fatalf("refused ctl %q (%v) changed the unit:\n%s\nwas:\n%s", cmd, err, after, before)
		}
	})
}
