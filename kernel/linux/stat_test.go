package linux

import (
	"strings"
	"testing"
)

// kernelStats takes the totals from their lines, idle as idle plus iowait
// in nanoseconds, and says which counters it could not find.
func TestKernelStats(t *testing.T) {
	stat := "cpu  10 0 20 300 5 0 1 0 0 0\ncpu0 10 0 20 300 5 0 1 0 0 0\nintr 1234 0 9 0 0\nctxt 5678\nbtime 1700000000\nprocesses 42\n"
	vm := "nr_free_pages 100\npgfault 999\npgmajfault 3\n"
	got, err := kernelStats([]byte(stat), []byte(vm))
	want := "interrupts 1234\nswitches 5678\npage_faults 999\nidle_ns 3050000000\n"
	if err != nil || got != want {
		t.Fatalf("kernelStats = %q, %v; want %q", got, err, want)
	}
	for name, bad := range map[string][2]string{
		"no pgfault":   {stat, "pgmajfault 3\n"},
		"no ctxt":      {strings.Replace(stat, "ctxt 5678\n", "", 1), vm},
		"a short cpu":  {strings.Replace(stat, "cpu  10 0 20 300 5 0 1 0 0 0\n", "cpu  10 0 20\n", 1), vm},
		"not a number": {strings.Replace(stat, "intr 1234", "intr x", 1), vm},
	} {
		if got, err := kernelStats([]byte(bad[0]), []byte(bad[1])); err == nil {
			t.Errorf("%s: %q, no error", name, got)
		}
	}
}
