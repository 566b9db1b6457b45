package igc

import (
	"testing"

	"github.com/ether9/ether9/drivers/advregs"
	"github.com/ether9/ether9/drivers/internal/advplay"
)

func TestIVARSlot(t *testing.T) {
	for _, c := range []struct {
		q     int
		tx    bool
		reg   uint32
		shift uint
	}{
		{0, false, advregs.IVAR0, 0},
		{0, true, advregs.IVAR0, 8},
		{1, false, advregs.IVAR0, 16},
		{1, true, advregs.IVAR0, 24},
		{2, false, advregs.IVAR0 + 4, 0},
		{3, true, advregs.IVAR0 + 4, 24},
	} {
		reg, shift := ivarSlot(c.q, c.tx)
		if reg != c.reg || shift != c.shift {
			t.Errorf("queue %d tx %v: IVAR %#x bit %d, want %#x bit %d", c.q, c.tx, reg, shift, c.reg, c.shift)
		}
	}
}

// Bring-up puts the line in legacy mode: queue pair n on EICR bit n,
// no auto-clear or auto-mask, EITR0 moderating, only the link cause and
// EICR.Other enabled.
func TestInterruptRouting(t *testing.T) {
	r := newRig(t)
	defer r.Close(t)
	if n := len(r.d.queues); n != 4 {
		t.Fatalf("%d queues, want 4", n)
	}
	r.regs.Check(t, map[uint32]uint32{
		advregs.GPIE:      advregs.GPIE_NSICR,
		advregs.IVAR0:     0x80808080 | 1<<24 | 1<<16,
		advregs.IVAR0 + 4: 0x80808080 | 3<<24 | 3<<16 | 2<<8 | 2,
		advregs.EIAC:      0,
		advregs.EIAM:      0,
		advregs.EIMS:      advregs.EICR_OTHER,
		advregs.IMS:       advregs.ICR_LSC,
		advregs.EITR0:     50<<2 | advregs.EITR_CNT_IGNR,
	})
}

// An idle queue arms its own EICR bit and the queue causes, nothing else.
func TestWaitArmsOwnQueue(t *testing.T) {
	r := newRig(t)
	defer r.Close(t)
	advplay.CheckIdleArm(t, r.regs.File, r.Unit, r.d.queues)
}
