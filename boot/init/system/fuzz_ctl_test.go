package system

import (
	"strings"
	"sync/atomic"
	"testing"
)

// FuzzMachineCtl: the machine grammar halts for exactly "machine
// poweroff" and "machine reboot" (as fields), never for anything else,
// and every refusal says why. The halts the accepted commands schedule
// land on a counter, not the machine.
func FuzzMachineCtl(f *testing.F) {
	for _, s := range []string{"machine poweroff", "machine reboot", "machine", "machine halt", "machine poweroff now",
		" machine  reboot ", "machine\tpoweroff", "MACHINE poweroff", "machine poweroff\x00", "iommu strict", "ether0 tso off", ""} {
		f.Add(s)
	}
	var halts atomic.Int64
	s := &System{plat: Platform{Name: "test", Halt: func(bool) error { halts.Add(1); return nil }}, logf: func(string, ...any) {}}
	f.Fuzz(func(t *testing.T, cmd string) {
		err := s.Ctl(cmd)
		fl := strings.Fields(cmd)
		want := len(fl) == 2 && fl[0] == "machine" && (fl[1] == "poweroff" || fl[1] == "reboot")
		if want != (err == nil) {
			t.Fatalf("ctl %q: %v, want accepted %v", cmd, err, want)
		}
		if err != nil && strings.TrimSpace(err.Error()) == "" {
			t.Fatalf("ctl %q refused without a reason", cmd)
		}
	})
}
