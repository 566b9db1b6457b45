package m82576

import (
	"bytes"
	"testing"

	"github.com/ether9/ether9/kernel/sim/nicmodel"
)

// An IVAR entry routes its queue's cause to an EICR bit only while its
// valid bit is set.
func TestIVARValidBit(t *testing.T) {
	r := newRig(t)
	g := r.Regs
	r.setupRx(0, 8, 2048)
	f := udp4(srcIP4, dstIP4, 1, 2, make([]byte, 64))

	g.Write32(nicmodel.IVAR0, 6) // vector 6, not valid
	g.Read32(nicmodel.EICR)
	r.Inject(f)
	if v := g.Read32(nicmodel.EICR); v != 0 {
		t.Errorf("EICR %#x from an entry without its valid bit", v)
	}
	g.Write32(nicmodel.IVAR0, nicmodel.IvarValid|6)
	r.Inject(f)
	if v := g.Read32(nicmodel.EICR); v != 1<<6 {
		t.Errorf("EICR %#x, want vector 6", v)
	}
	// TX queue 0 is byte 1 of IVAR(0).
	g.Write32(nicmodel.IVAR0, nicmodel.IvarValid|6|(nicmodel.IvarValid|2)<<8)
	r.setupTx(0, 8)
	r.post(0, dataDesc(r.buf(0, f), len(f), TxdEOP|TxdRS, uint32(len(f))<<OlinfoPayLenSh))
	if v := g.Read32(nicmodel.EICR); v&(1<<2) == 0 {
		t.Errorf("EICR %#x after TX on queue 0, want vector 2", v)
	}
}

// In MSI-X mode a vector fires once: EIAC clears its cause and EIAM
// (with GPIE.EIAME) masks it until software writes EIMS again; a cause
// that comes while it is masked waits and fires at the re-arm.
func TestMSIXAutoClearAutoMask(t *testing.T) {
	r := newRig(t)
	g := r.Regs
	irq := r.M.IRQ(nicAddr)
	r.setupRx(0, 16, 2048)
	f := udp4(srcIP4, dstIP4, 1, 2, make([]byte, 64))
	g.Write32(nicmodel.GPIE, nicmodel.GpieMultiMSIX|nicmodel.GpieEIAME|nicmodel.GpieNSICR)
	g.Write32(nicmodel.IVAR0, nicmodel.IvarValid|2)
	g.Write32(nicmodel.EIAC, 1<<2)
	g.Write32(nicmodel.EIAM, 1<<2)
	g.Write32(nicmodel.EIMS, 1<<2)

	before := irq.Raised()
	r.Inject(f)
	if irq.Raised() != before+1 {
		t.Fatalf("%d interrupts for one frame, want 1", irq.Raised()-before)
	}
	if v := g.Read32(nicmodel.EIMS); v&(1<<2) != 0 {
		t.Errorf("EIMS %#x: vector 2 not auto-masked", v)
	}
	r.Inject(f)
	if irq.Raised() != before+1 {
		t.Error("a masked vector fired")
	}
	g.Write32(nicmodel.EIMS, 1<<2) // re-arm: the waiting cause fires now
	if irq.Raised() != before+2 {
		t.Error("the cause that came while masked did not fire at the re-arm")
	}
	if v := g.Read32(nicmodel.EIMS); v&(1<<2) != 0 {
		t.Errorf("EIMS %#x: vector 2 not masked again", v)
	}
	g.Write32(nicmodel.EIMS, 1<<2)
	if irq.Raised() != before+2 {
		t.Error("an auto-cleared cause fired twice")
	}

	// Without EIAME, EIAM masks nothing; without EIAC the cause stays
	// until written to clear, and re-fires at each re-arm.
	g.Write32(nicmodel.GPIE, nicmodel.GpieMultiMSIX)
	g.Write32(nicmodel.EIAC, 0)
	r.Inject(f)
	if v := g.Read32(nicmodel.EIMS); v&(1<<2) == 0 {
		t.Errorf("EIMS %#x: masked without GPIE.EIAME", v)
	}
	g.Write32(nicmodel.EIMC, 1<<2)
	g.Write32(nicmodel.EIMS, 1<<2)
	if irq.Raised() != before+4 {
		t.Errorf("%d interrupts, want 4: a cause EIAC does not clear fires again when re-armed", irq.Raised()-before)
	}
	g.Write32(nicmodel.EICR, 1<<2)
	g.Write32(nicmodel.EIMC, 1<<2)
	g.Write32(nicmodel.EIMS, 1<<2)
	if irq.Raised() != before+4 {
		t.Error("a cause cleared by writing EICR fired")
	}
}

// The ICR causes reach their own vector (IVAR_MISC) in MSI-X mode, when
// enabled in IMS, and bit 31 of EICR outside it.
func TestOtherCauseVector(t *testing.T) {
	r := newRig(t)
	g := r.Regs
	irq := r.M.IRQ(nicAddr)
	g.Write32(nicmodel.GPIE, nicmodel.GpieMultiMSIX|nicmodel.GpieEIAME|nicmodel.GpieNSICR)
	g.Write32(nicmodel.IVAR_MISC, (nicmodel.IvarValid|4)<<8)
	g.Write32(nicmodel.EIAM, 1<<4)
	g.Write32(nicmodel.EIMS, 1<<4)
	g.Read32(nicmodel.ICR)

	before := irq.Raised()
	r.Wire.SetLink(false, 1000)
	if irq.Raised() != before {
		t.Error("a link change with IMS.LSC clear fired")
	}
	g.Read32(nicmodel.ICR)
	g.Write32(nicmodel.IMS, nicmodel.IntLSC)
	r.Wire.SetLink(true, 1000)
	if irq.Raised() != before+1 {
		t.Fatalf("%d interrupts for a link change, want 1", irq.Raised()-before)
	}
	if v := g.Read32(nicmodel.EICR); v != 1<<4 {
		t.Errorf("EICR %#x, want vector 4", v)
	}
	if v := g.Read32(nicmodel.ICR); v&nicmodel.IntLSC == 0 {
		t.Errorf("ICR %#x: LSC not latched", v)
	}
	if v := g.Read32(nicmodel.EIMS); v&(1<<4) != 0 {
		t.Errorf("EIMS %#x: vector 4 not auto-masked", v)
	}

	// Outside MSI-X mode the same cause sets EICR's Other bit and
	// asserts the line.
	g.Write32(nicmodel.GPIE, 0)
	g.Read32(nicmodel.ICR)
	r.Wire.SetLink(false, 1000)
	if v := g.Read32(nicmodel.EICR); v&nicmodel.EicrOther == 0 {
		t.Errorf("EICR %#x: no Other bit outside MSI-X mode", v)
	}
	if irq.Raised() != before+2 {
		t.Error("no interrupt outside MSI-X mode")
	}
}

// With DeferRx, writing EIMS with the bit a queue's IVAR entry names
// lands that queue's waiting frames, and only that queue's.
func TestDeferRxArmDrains(t *testing.T) {
	r := newRig(t)
	m := r.M
	n, err := New(Options{MAC: peerMAC, DeferRx: true}, m.Port(nicAddr), m.IRQ(nicAddr))
	if err != nil {
		t.Fatal(err)
	}
	r.nic, r.Regs = n, n.Regs()
	n.Attach(r.Wire.A())
	g := r.Regs
	g.Write32(nicmodel.CTRL, nicmodel.CtrlSLU)
	r.setupRx(0, 8, 2048)
	r.setupRx(1, 8, 2048)
	g.Write32(nicmodel.GPIE, nicmodel.GpieMultiMSIX|nicmodel.GpieEIAME|nicmodel.GpieNSICR)
	g.Write32(nicmodel.IVAR0, nicmodel.IvarValid|0)
	g.Write32(nicmodel.IVAR0+4, nicmodel.IvarValid|1)
	g.Write32(nicmodel.EIAC, 3)
	g.Write32(nicmodel.EIAM, 3)
	const steered = 0x88b5
	g.Write32(ETQF0, steered|EtqfFilter|EtqfQueueEn|1<<EtqfQueueSh)

	f := udp4(srcIP4, dstIP4, 1, 2, []byte("zero"))
	copy(f, peerMAC[:])
	h := make([]byte, 60)
	copy(h, peerMAC[:])
	h[12], h[13] = steered>>8, steered&0xff
	r.Inject(f)
	r.Inject(h)

	g.Write32(nicmodel.EIMS, 1<<5) // a vector no queue is on
	if n.Counters().RxFrames != 0 {
		t.Fatal("arming an unused vector wrote a ring")
	}
	irq := m.IRQ(nicAddr)
	before := irq.Raised()
	g.Write32(nicmodel.EIMS, 1<<1)
	if got, _, ok := r.takeRx(1); !ok || !bytes.Equal(got, h) {
		t.Fatal("queue 1's frame did not land when its vector was armed")
	}
	if n.pbq[0].Len() != 1 {
		t.Error("arming queue 1's vector moved queue 0's frame")
	}
	if irq.Raised() == before {
		t.Error("the landed frame did not fire its vector")
	}
	if v := g.Read32(nicmodel.EIMS); v&(1<<1) != 0 {
		t.Errorf("EIMS %#x: vector 1 not auto-masked after firing", v)
	}
	g.Write32(nicmodel.IVAR0, 0) // queue 0's entry no longer valid
	g.Write32(nicmodel.EIMS, 1<<0)
	if n.pbq[0].Len() != 1 {
		t.Error("an invalid IVAR entry still tied queue 0 to vector 0")
	}
	g.Write32(nicmodel.IVAR0, nicmodel.IvarValid|0)
	g.Write32(nicmodel.EIMS, 1<<0)
	if got, _, ok := r.takeRx(0); !ok || !bytes.Equal(got, f) {
		t.Error("queue 0's frame did not land when its vector was armed")
	}
}
