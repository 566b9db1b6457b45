package igb

import (
	"testing"

	"github.com/ether9/ether9/drivers/advregs"
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
		{Mac82576, 0, false, advregs.IVAR0, 0},
		{Mac82576, 0, true, advregs.IVAR0, 8},
		{Mac82576, 3, false, advregs.IVAR0 + 12, 0},
		{Mac82576, 9, false, advregs.IVAR0 + 4, 16},
		{Mac82576, 15, true, advregs.IVAR0 + 28, 24},
		{Mac82580, 0, true, advregs.IVAR0, 8},
		{Mac82580, 1, false, advregs.IVAR0, 16},
		{MacI350, 2, false, advregs.IVAR0 + 4, 0},
		{MacI350, 3, true, advregs.IVAR0 + 4, 24},
		{MacI210, 1, true, advregs.IVAR0, 24},
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
		advregs.GPIE:  advregs.GPIE_NSICR,
		advregs.EIAC:  0,
		advregs.EIAM:  0,
		advregs.EIMS:  advregs.EICR_OTHER,
		advregs.IMS:   advregs.ICR_LSC,
		advregs.EITR0: 50 << advregs.EITR_INTERVAL_SHIFT,
	}
	for q := range uint32(n) {
		want[advregs.IVAR0+4*q] = (advregs.IVAR_VALID | q) | (advregs.IVAR_VALID|q)<<8
	}
	r.regs.Check(t, want)
}

// An idle queue arms its own EICR bit and the queue causes, nothing else.
func TestWaitArmsOwnQueue(t *testing.T) {
	r := newRig(t)
	defer r.Close(t)
	advplay.CheckIdleArm(t, r.regs.File, r.Unit, r.d.queues)
}
