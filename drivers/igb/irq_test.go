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

// Bring-up routes queue pair n to vector n and link to the next vector,
// each auto-clearing and auto-masking, moderated, and armed.
func TestInterruptRouting(t *testing.T) {
	r := newRig(t)
	defer r.Close(t)
	n := len(r.d.queues)
	if n != 4 {
		t.Fatalf("%d queues, want 4", n)
	}
	want := map[uint32]uint32{
		advregs.GPIE:      advregs.GPIE_NSICR | advregs.GPIE_MULTIPLE_MSIX | advregs.GPIE_EIAME | advregs.GPIE_PBA,
		advregs.IVAR_MISC: (advregs.IVAR_VALID | 4) << 8,
		advregs.EIAC:      0x1f,
		advregs.EIAM:      0x1f,
		advregs.EIMS:      0x1f,
		advregs.IMS:       advregs.ICR_LSC,
	}
	for q := range uint32(n) {
		want[advregs.IVAR0+4*q] = (advregs.IVAR_VALID | q) | (advregs.IVAR_VALID|q)<<8
	}
	for v := range uint32(n + 1) {
		want[advregs.EITR0+4*v] = 50 << advregs.EITR_INTERVAL_SHIFT
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
