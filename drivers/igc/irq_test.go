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

// Bring-up routes queue pair n to vector n and link to vector 4, each
// auto-clearing, auto-masking and moderated, and arms them all.
func TestInterruptRouting(t *testing.T) {
	r := newRig(t)
	defer r.Close(t)
	if n := len(r.d.queues); n != 4 {
		t.Fatalf("%d queues, want 4", n)
	}
	want := map[uint32]uint32{
		advregs.GPIE:      advregs.GPIE_NSICR | advregs.GPIE_MULTIPLE_MSIX | advregs.GPIE_EIAME | advregs.GPIE_PBA,
		advregs.IVAR0:     0x80808080 | 1<<24 | 1<<16,
		advregs.IVAR0 + 4: 0x80808080 | 3<<24 | 3<<16 | 2<<8 | 2,
		advregs.IVAR_MISC: (advregs.IVAR_VALID | 4) << 8,
		advregs.EIAC:      0x1f,
		advregs.EIAM:      0x1f,
		advregs.EIMS:      0x1f,
		advregs.IMS:       advregs.ICR_LSC,
	}
	for v := range uint32(5) {
		want[advregs.EITR0+4*v] = 50<<2 | advregs.EITR_CNT_IGNR
	}
	r.regs.Check(t, want)
}

// An idle queue re-arms its own vector and the link vector (4), nothing
// else.
func TestWaitRearmsOwnVector(t *testing.T) {
	r := newRig(t)
	defer r.Close(t)
	advplay.CheckIdleRearm(t, r.regs.File, r.Unit, r.d.queues, 4)
}
