package advplay

import (
	"fmt"
	"testing"
	"time"

	"github.com/ether9/ether9/drivers/advregs"
	"github.com/ether9/ether9/drivers/internal/nictest"
	"github.com/ether9/ether9/drivers/internal/regfile"
)

// Waiter is a queue's idle sleep on its interrupt vector.
type Waiter interface {
	Wait(timeout time.Duration) bool
}

// CheckIdleRearm checks the MSI-X scheme the parts share: a queue that
// goes idle with every vector masked re-arms in EIMS its own vector and
// the link vector, nothing else, counting one re-arm and no wake-up; and
// once the NIC closes every vector is masked and a Wait reports no
// interrupt. Queue i is on vector i.
func CheckIdleRearm[Q Waiter](t testing.TB, regs *regfile.File, u nictest.Unit, queues []Q, linkVector int) {
	t.Helper()
	for i, q := range queues {
		regs.Set(advregs.EIMS, 0)
		if q.Wait(0) {
			t.Errorf("queue %d: woken with no interrupt", i)
		}
		if got, want := regs.Get(advregs.EIMS), uint32(1<<i|1<<linkVector); got != want {
			t.Errorf("queue %d re-armed EIMS %#x, want %#x", i, got, want)
		}
		if got := u.Stat(t, fmt.Sprintf("q%d_irq_rearm", i)); got != 1 {
			t.Errorf("q%d_irq_rearm %d, want 1", i, got)
		}
		if got := u.Stat(t, fmt.Sprintf("q%d_irq_wake", i)); got != 0 {
			t.Errorf("q%d_irq_wake %d with no interrupt", i, got)
		}
	}
	if err := u.NIC.Close(); err != nil {
		t.Fatal(err)
	}
	if regs.Get(advregs.EIMC) != 0xffffffff {
		t.Error("Close left vectors unmasked")
	}
	if len(queues) > 0 && queues[0].Wait(time.Hour) {
		t.Error("Wait after Close reported an interrupt")
	}
}
