package igc

import (
	"testing"

	"github.com/ether9/ether9/drivers/adv"
	"github.com/ether9/ether9/drivers/internal/advplay"
)

func TestIVARSlot(t *testing.T) {
	for _, c := range []struct {
		q     int
		tx    bool
		reg   uint32
		shift uint
	}{
		{0, false, adv.IVAR0, 0},
		{0, true, adv.IVAR0, 8},
		{1, false, adv.IVAR0, 16},
		{1, true, adv.IVAR0, 24},
		{2, false, adv.IVAR0 + 4, 0},
		{3, true, adv.IVAR0 + 4, 24},
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
		adv.GPIE:      adv.GPIE_NSICR,
		adv.IVAR0:     0x80808080 | 1<<24 | 1<<16,
		adv.IVAR0 + 4: 0x80808080 | 3<<24 | 3<<16 | 2<<8 | 2,
		adv.EIAC:      0,
		adv.EIAM:      0,
		adv.EIMS:      adv.EICR_OTHER,
		adv.IMS:       adv.ICR_LSC,
		adv.EITR0:     50<<2 | adv.EITR_CNT_IGNR,
	})
}

// An idle queue arms its own EICR bit and the queue causes, nothing else.
func TestWaitArmsOwnQueue(t *testing.T) {
	r := newRig(t)
	defer r.Close(t)
	advplay.CheckIdleArm(t, r.regs.File, r.Unit, r.d.queues, adv.IMS, adv.IMC)
}

// A spinning poll loop asks the ring in memory whether a frame waits,
// never the registers.
func TestRxReady(t *testing.T) {
	r := newRig(t)
	advplay.CheckRxReady(t, r.regs.File, r.Device, r.Unit, r.d.queues[0], 0)
}
