package advplay

import (
	"fmt"
	"testing"
	"time"

	"github.com/ether9/ether9/drivers/adv"
	"github.com/ether9/ether9/drivers/internal/fakedev"
	"github.com/ether9/ether9/drivers/internal/nictest"
)

// Waiter is a queue's idle sleep on the function's interrupt.
type Waiter interface {
	Wait(timeout time.Duration) bool
}

// queueCauses are the ICR causes the queues share in legacy mode.
const queueCauses = adv.ICR_RXDW | adv.ICR_RXDMT0

// CheckIdleArm checks the legacy scheme the parts share: a queue that
// goes idle enables its own EICR bit (bit i for queue i) and the queue
// causes in IMS, nothing else, and with nothing pending times out and
// masks them again, counting one timeout and no wake-up; and once the NIC
// closes every cause is masked and a Wait reports no interrupt.
// ims and imc are where the part decodes IMS and IMC.
func CheckIdleArm[Q Waiter](t testing.TB, regs *fakedev.File, u nictest.Unit, queues []Q, ims, imc uint32) {
	t.Helper()
	for i, q := range queues {
		eimsW, imsW := regs.Writes(adv.EIMS), regs.Writes(ims)
		if q.Wait(0) {
			t.Errorf("queue %d: woken with no interrupt", i)
		}
		if regs.Writes(adv.EIMS) != eimsW+1 || regs.Get(adv.EIMS) != 1<<i {
			t.Errorf("queue %d armed EIMS %#x (%d writes), want %#x once", i, regs.Get(adv.EIMS), regs.Writes(adv.EIMS)-eimsW, 1<<i)
		}
		if regs.Writes(ims) != imsW+1 || regs.Get(ims) != queueCauses {
			t.Errorf("queue %d armed IMS %#x, want %#x", i, regs.Get(ims), queueCauses)
		}
		if got, want := regs.Get(adv.EIMC), uint32(1<<i); got != want {
			t.Errorf("queue %d left EIMC %#x, want %#x", i, got, want)
		}
		if got := regs.Get(imc); got != queueCauses {
			t.Errorf("queue %d left IMC %#x, want the queue causes %#x", i, got, queueCauses)
		}
		if got := u.Stat(t, fmt.Sprintf("q%d_irq_timeout", i)); got != 1 {
			t.Errorf("q%d_irq_timeout %d, want 1", i, got)
		}
		if got := u.Stat(t, fmt.Sprintf("q%d_irq_wake", i)); got != 0 {
			t.Errorf("q%d_irq_wake %d with no interrupt", i, got)
		}
	}
	if got := u.Stat(t, "irq_timeouts"); got != uint64(len(queues)) {
		t.Errorf("irq_timeouts %d, want %d", got, len(queues))
	}
	if err := u.NIC.Close(); err != nil {
		t.Fatal(err)
	}
	if regs.Get(adv.EIMC) != 0xffffffff || regs.Get(imc) != 0xffffffff {
		t.Error("Close left causes unmasked")
	}
	if len(queues) > 0 && queues[0].Wait(time.Hour) {
		t.Error("Wait after Close reported an interrupt")
	}
}
