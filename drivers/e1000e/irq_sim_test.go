package e1000e_test

import (
	"testing"
	"time"

	"github.com/ether9/ether9/drivers/nic"

	"github.com/ether9/ether9/kernel/sim/m82574"
	"github.com/ether9/ether9/kernel/sim/nicmodel"
)

// The legacy interrupt path, NAPI-style: the throttle is programmed, a
// frame wakes a sleeping queue, the causes are off while the queue polls
// (frames landing then raise nothing), and a frame that lands between the
// last empty poll and the sleep ends the sleep at once. Fails if Wait
// does not re-enable the causes before it sleeps (that frame would wait
// for the next one), or does not disable them when it wakes.
func TestSimIRQ(t *testing.T) {
	mc := newMachine(t, rigOpt{})
	defer mc.close(t)
	irq := mc.Machine.IRQ(machineAddr)
	regs := mc.Model.Regs()
	if itr := regs.Read32(m82574.ITR); itr == 0 {
		t.Errorf("ITR %d after probe: interrupts are not throttled", itr)
	}
	mc.release(mc.poll())
	// Nothing pending: the sleep times out. An hour of virtual time.
	if mc.q.Wait(time.Hour) {
		t.Fatalf("Wait woke with nothing received (IMS %#x, raised %d)", regs.Read32(nicmodel.IMS), irq.Raised())
	}

	mc.wire.B().Send(mc.frame(60, 1))
	if !mc.q.Wait(time.Hour) {
		t.Fatalf("a received frame did not end the sleep (IMS %#x, raised %d)", regs.Read32(nicmodel.IMS), irq.Raised())
	}
	// Polling: the causes are off, more frames raise nothing.
	if ims := regs.Read32(nicmodel.IMS); ims != 0 {
		t.Errorf("IMS %#x after the wake-up: the causes must be off while the queue polls", ims)
	}
	raised := irq.Raised()
	for i := range 3 {
		mc.wire.B().Send(mc.frame(60, byte(2+i)))
	}
	if n := mc.release(mc.poll()); n != 4 {
		t.Errorf("polled %d frames, want 4", n)
	}
	if got := irq.Raised(); got != raised {
		t.Errorf("%d interrupts while the queue polled, want none", got-raised)
	}

	// A frame after the last empty poll, before the sleep.
	mc.wire.B().Send(mc.frame(60, 9))
	if !mc.q.Wait(time.Hour) {
		t.Fatalf("a frame that landed before the sleep waited for the next one (IMS %#x, raised %d)", regs.Read32(nicmodel.IMS), irq.Raised())
	}
	if n := mc.release(mc.poll()); n != 1 {
		t.Errorf("polled %d frames after the wake-up, want 1", n)
	}
}

// release hands the frames back and counts them.
func (mc *machine) release(pkts []*nic.RxPacket) int {
	for _, p := range pkts {
		p.Data.Release()
	}
	return len(pkts)
}
