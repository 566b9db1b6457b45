package igb

import (
	"testing"

	"github.com/ether9/ether9/drivers/adv"
	"github.com/ether9/ether9/drivers/internal/advplay"
)

func TestIVARSlot(t *testing.T) {
	for _, c := range []struct {
		mac   MACType
		q     int
		tx    bool
		reg   uint32
		shift uint
	}{
		{Mac82576, 0, false, adv.IVAR0, 0},
		{Mac82576, 0, true, adv.IVAR0, 8},
		{Mac82576, 3, false, adv.IVAR0 + 12, 0},
		{Mac82576, 9, false, adv.IVAR0 + 4, 16},
		{Mac82576, 15, true, adv.IVAR0 + 28, 24},
		{Mac82580, 0, true, adv.IVAR0, 8},
		{Mac82580, 1, false, adv.IVAR0, 16},
		{MacI350, 2, false, adv.IVAR0 + 4, 0},
		{MacI350, 3, true, adv.IVAR0 + 4, 24},
		{MacI210, 1, true, adv.IVAR0, 24},
	} {
		reg, shift := ivarSlot(c.mac, c.q, c.tx)
		if reg != c.reg || shift != c.shift {
			t.Errorf("%v queue %d tx %v: IVAR %#x bit %d, want %#x bit %d", c.mac, c.q, c.tx, reg, shift, c.reg, c.shift)
		}
	}
}

// Bring-up puts the line in legacy mode: queue pair n on EICR bit n,
// no auto-clear or auto-mask, EITR0 moderating, only the link cause and
// EICR.Other enabled.
func TestInterruptRouting(t *testing.T) {
	r := newRig(t)
	defer r.Close(t)
	n := len(r.d.queues)
	if n != 4 {
		t.Fatalf("%d queues, want 4", n)
	}
	want := map[uint32]uint32{
		adv.GPIE:  adv.GPIE_NSICR,
		adv.EIAC:  0,
		adv.EIAM:  0,
		adv.EIMS:  adv.EICR_OTHER,
		IMS:       adv.ICR_LSC,
		adv.EITR0: 50 << adv.EITR_INTERVAL_SHIFT,
	}
	for q := range uint32(n) {
		want[adv.IVAR0+4*q] = (adv.IVAR_VALID | q) | (adv.IVAR_VALID|q)<<8
	}
	r.regs.Check(t, want)
}

// An idle queue arms its own EICR bit and the queue causes, nothing else.
func TestWaitArmsOwnQueue(t *testing.T) {
	r := newRig(t)
	defer r.Close(t)
	advplay.CheckIdleArm(t, r.regs.File, r.Unit, r.d.queues, IMS, IMC)
}

// A spinning poll loop asks the ring in memory whether a frame waits,
// never the registers.
func TestRxReady(t *testing.T) {
	r := newRig(t)
	advplay.CheckRxReady(t, r.regs.File, r.Device, r.Unit, r.d.queues[0], 0)
}
