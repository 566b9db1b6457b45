package mi225

import (
	"testing"

	"github.com/ether9/ether9/kernel/sim/nicmodel"
)

func TestStatusSpeedEncoding(t *testing.T) {
	r := newRig(t, 0x125c) // I226-V
	for _, c := range []struct {
		mbps  int
		speed uint32 // STATUS.SPEED field
		s2500 bool
	}{
		{10, 0, false}, {100, StatusSpeed100, false}, {1000, StatusSpeed1000, false},
		{2500, StatusSpeed1000, true}, {100, StatusSpeed100, false},
	} {
		if err := r.Wire.SetLink(true, c.mbps); err != nil {
			t.Fatal(err)
		}
		s := r.Regs.Read32(nicmodel.STATUS)
		if s&nicmodel.StatusLU == 0 || s&nicmodel.StatusFD == 0 {
			t.Fatalf("%d Mb/s: STATUS %#x, want LU and FD", c.mbps, s)
		}
		if s&StatusSpeedMask != c.speed || (s&StatusSpeed2500 != 0) != c.s2500 {
			t.Fatalf("%d Mb/s: STATUS %#x: SPEED %#x 2500 %v, want %#x %v",
				c.mbps, s, s&StatusSpeedMask, s&StatusSpeed2500 != 0, c.speed, c.s2500)
		}
	}
	if err := r.Wire.SetLink(false, 1000); err != nil {
		t.Fatal(err)
	}
	if s := r.Regs.Read32(nicmodel.STATUS); s&(nicmodel.StatusLU|StatusSpeedMask|StatusSpeed2500) != 0 {
		t.Fatalf("link down: STATUS %#x", s)
	}
}

func TestSetLinkSpeedsPerPart(t *testing.T) {
	r := newRig(t, 0x15f7) // I220-V: 1 GbE
	if err := r.nic.SetLink(true, 2500); err == nil {
		t.Fatal("I220-V accepted a 2.5 Gb/s link")
	}
	// A 2.5 Gb/s partner on the wire negotiates down to 1000.
	if up, mbps := r.nic.Link(); !up || mbps != 1000 {
		t.Fatalf("I220-V on a 2.5 Gb/s wire: link %v %d, want up at 1000", up, mbps)
	}
	r = newRig(t, 0x15f3)
	if err := r.nic.SetLink(true, 2500); err != nil {
		t.Fatal(err)
	}
	if err := r.nic.SetLink(true, 5000); err == nil {
		t.Fatal("5 Gb/s accepted")
	}
}

func TestLinkChangeRaisesLSC(t *testing.T) {
	r := newRig(t, 0x15f3)
	r.Regs.Read32(ICR) // the LSC of attaching
	r.Regs.Write32(IMS, nicmodel.IntLSC)
	before := r.nic.Counters().Interrupts
	if err := r.nic.SetLink(false, 2500); err != nil {
		t.Fatal(err)
	}
	icr := r.Regs.Read32(ICR)
	if icr&nicmodel.IntLSC == 0 || icr&nicmodel.IntAsserted == 0 {
		t.Fatalf("ICR %#x after link loss, want LSC and INT_ASSERTED", icr)
	}
	if r.Regs.Read32(ICR) != 0 {
		t.Fatal("ICR not cleared by the read of an asserted interrupt")
	}
	if r.nic.Counters().Interrupts == before {
		t.Fatal("no interrupt for LSC")
	}
	// The same state again is no change.
	if err := r.nic.SetLink(false, 2500); err != nil {
		t.Fatal(err)
	}
	if icr := r.Regs.Read32(ICR); icr != 0 {
		t.Fatalf("ICR %#x with no link change", icr)
	}
}

func TestMSIXVectorsFollowIVAR(t *testing.T) {
	r := newRig(t, 0x15f3)
	r.Regs.Write32(nicmodel.GPIE, nicmodel.GpieMultiMSIX|nicmodel.GpieEIAME|nicmodel.GpiePBA)
	// Queue 1 RX on vector 2, queue 1 TX on vector 3, other causes on 4.
	r.Regs.Write32(nicmodel.IVAR0, uint32(nicmodel.IvarValid|2)<<16|uint32(nicmodel.IvarValid|3)<<24)
	r.Regs.Write32(nicmodel.IVAR_MISC, (nicmodel.IvarValid|4)<<8) // other causes: bits 15:8
	r.Regs.Write32(nicmodel.EIAC, 1<<2)
	r.Regs.Write32(nicmodel.EIAM, 1<<2)
	r.Regs.Write32(nicmodel.EIMS, 1<<2|1<<3|1<<4)
	r.Regs.Read32(ICR) // the LSC of attaching
	r.Regs.Write32(IMS, nicmodel.IntLSC)

	r.nic.mu.Lock()
	r.nic.queueEventLocked(1, false)
	r.nic.queueEventLocked(1, true)
	r.nic.mu.Unlock()
	c := r.nic.Counters()
	if c.Vectors[2] != 1 || c.Vectors[3] != 1 {
		t.Fatalf("vectors %v, want one message on 2 and 3", c.Vectors)
	}
	eicr := r.Regs.Read32(nicmodel.EICR)
	if eicr&(1<<2) != 0 {
		t.Fatalf("EICR %#x: vector 2 not auto-cleared by EIAC", eicr)
	}
	if eicr&(1<<3) == 0 {
		t.Fatalf("EICR %#x: vector 3 should stay set", eicr)
	}
	if ims := r.Regs.Read32(nicmodel.EIMS); ims&(1<<2) != 0 || ims&(1<<3) == 0 {
		t.Fatalf("EIMS %#x: want 2 auto-masked by EIAM, 3 still enabled", ims)
	}
	r.Regs.Write32(nicmodel.EICR, 1<<3)
	if v := r.Regs.Read32(nicmodel.EICR); v != 0 {
		t.Fatalf("EICR %#x after write-1-to-clear", v)
	}
	// A masked vector latches without a message; unmasking fires it.
	r.nic.mu.Lock()
	r.nic.queueEventLocked(1, false)
	r.nic.mu.Unlock()
	if c := r.nic.Counters(); c.Vectors[2] != 1 {
		t.Fatalf("masked vector 2 sent a message: %v", c.Vectors)
	}
	r.Regs.Write32(nicmodel.EIMS, 1<<2)
	if c := r.nic.Counters(); c.Vectors[2] != 2 {
		t.Fatalf("unmasking vector 2 did not fire it: %v", c.Vectors)
	}
	// EICS raises a vector by software; EIMC masks.
	r.Regs.Write32(nicmodel.EIMC, 1<<3)
	r.Regs.Write32(nicmodel.EICS, 1<<3)
	if c := r.nic.Counters(); c.Vectors[3] != 1 {
		t.Fatalf("EICS on a masked vector fired: %v", c.Vectors)
	}
	// Link change goes to the IVAR_MISC vector.
	if err := r.nic.SetLink(true, 1000); err != nil {
		t.Fatal(err)
	}
	if c := r.nic.Counters(); c.Vectors[4] != 1 {
		t.Fatalf("LSC did not reach vector 4: %v", c.Vectors)
	}
	if icr := r.Regs.Read32(ICR); icr&nicmodel.IntLSC == 0 {
		t.Fatalf("ICR %#x, want LSC", icr)
	}
}

func TestICRReadClearRules(t *testing.T) {
	r := newRig(t, 0x15f3)
	r.Regs.Read32(ICR)
	r.Regs.Write32(IMS, nicmodel.IntRXO)
	r.Regs.Write32(ICS, nicmodel.IntLSC) // not enabled: latched, not asserted
	if v := r.Regs.Read32(ICR); v != nicmodel.IntLSC {
		t.Fatalf("ICR %#x, want LSC alone", v)
	}
	if v := r.Regs.Read32(ICR); v != nicmodel.IntLSC {
		t.Fatalf("ICR %#x: cleared although not asserted and IMS nonzero", v)
	}
	r.Regs.Write32(nicmodel.GPIE, nicmodel.GpieNSICR)
	r.Regs.Read32(ICR)
	if v := r.Regs.Read32(ICR); v != 0 {
		t.Fatalf("ICR %#x: NSICR read did not clear", v)
	}
	r.Regs.Write32(ICS, nicmodel.IntLSC)
	r.Regs.Write32(ICR, nicmodel.IntLSC)
	if v := r.Regs.Read32(ICR); v != 0 {
		t.Fatalf("ICR %#x after write-1-to-clear", v)
	}
	if r.Regs.Read32(IMS) != nicmodel.IntRXO || r.Regs.Read32(ICS) != 0 {
		t.Fatal("IMS lost or ICS readable")
	}
	r.Regs.Write32(IMC, nicmodel.IntRXO)
	if v := r.Regs.Read32(IMS); v != 0 {
		t.Fatalf("IMS %#x after IMC", v)
	}
}

func TestDeviceResetRestoresDefaults(t *testing.T) {
	r := newRig(t, 0x15f3)
	r.setupRx(0, 8, 2048, SrrctlDescAdvOne, nicmodel.RctlSECRC)
	r.Regs.Write32(nicmodel.RAL0+8, 0x12345678)
	r.Regs.Write32(nicmodel.RAH0+8, 0x80001234)
	r.Wire.B().Send(udpFrame(false, ourMAC, payloadBytes(100, 1), true))
	if r.Regs.Read32(nicmodel.GPRC) != 1 {
		t.Fatal("frame not received before reset")
	}
	r.Wire.B().Send(udpFrame(false, ourMAC, payloadBytes(100, 1), true))
	r.Regs.Write32(nicmodel.CTRL, r.Regs.Read32(nicmodel.CTRL)|CtrlDevRST)
	if v := r.Regs.Read32(nicmodel.CTRL); v&CtrlDevRST != 0 {
		t.Fatalf("CTRL %#x: DEV_RST did not self-clear", v)
	}
	for _, c := range []struct {
		name string
		off  uint32
		want uint32
	}{
		{"RCTL", nicmodel.RCTL, 0}, {"RDLEN0", RDLEN, 0}, {"RXDCTL0", RXDCTL, 0}, {"RAH1", nicmodel.RAH0 + 8, 0},
		{"GPRC", nicmodel.GPRC, 0}, {"SRRCTL0", SRRCTL, 2 | 4<<SrrctlBSizeHdrShift},
		{"RAL0", nicmodel.RAL0, 0x22000002}, {"MDIC", nicmodel.MDIC, nicmodel.MdicReady}, {"VET", nicmodel.VET, 0x88a88100},
	} {
		if v := r.Regs.Read32(c.off); v != c.want {
			t.Errorf("%s = %#x after reset, want %#x", c.name, v, c.want)
		}
	}
	s := r.Regs.Read32(nicmodel.STATUS)
	if s&StatusPFRstDone == 0 || s&nicmodel.StatusLU == 0 {
		t.Fatalf("STATUS %#x after reset: want PF_RST_DONE and link up", s)
	}
	if icr := r.Regs.Read32(ICR); icr&IntDRSTA == 0 {
		t.Fatalf("ICR %#x after device reset, want DRSTA", icr)
	}
	// A frame now finds the receiver off.
	before := r.nic.Counters().RxOff
	r.Wire.B().Send(udpFrame(false, ourMAC, payloadBytes(100, 1), true))
	if r.nic.Counters().RxOff != before+1 {
		t.Fatal("frame accepted after reset turned the receiver off")
	}
}

func TestGIOMasterDisable(t *testing.T) {
	r := newRig(t, 0x15f3)
	if r.Regs.Read32(nicmodel.STATUS)&nicmodel.StatusGIOME == 0 {
		t.Fatal("GIO master not enabled at reset")
	}
	r.Regs.Write32(nicmodel.CTRL, r.Regs.Read32(nicmodel.CTRL)|nicmodel.CtrlGIOMDis)
	if r.Regs.Read32(nicmodel.STATUS)&nicmodel.StatusGIOME != 0 {
		t.Fatal("GIO master still enabled after CTRL.GIO_MASTER_DISABLE")
	}
}

func mdicRead(r *rig, phy, reg uint32) (uint16, bool) {
	r.Regs.Write32(nicmodel.MDIC, reg<<nicmodel.MdicRegSh|phy<<nicmodel.MdicPhySh|nicmodel.MdicOpRead)
	v := r.Regs.Read32(nicmodel.MDIC)
	if v&nicmodel.MdicReady == 0 {
		r.T.Fatalf("MDIC %#x not ready", v)
	}
	return uint16(v), v&nicmodel.MdicError == 0
}

func mdicWrite(r *rig, reg uint32, val uint16) {
	r.Regs.Write32(nicmodel.MDIC, reg<<nicmodel.MdicRegSh|PhyAddr<<nicmodel.MdicPhySh|nicmodel.MdicOpWrite|uint32(val))
	if v := r.Regs.Read32(nicmodel.MDIC); v&nicmodel.MdicReady == 0 || v&nicmodel.MdicError != 0 {
		r.T.Fatalf("MDIC write %#x", v)
	}
}

func mmdWrite(r *rig, dev, reg, val uint16) {
	mdicWrite(r, PhyMMDCTRL, dev)
	mdicWrite(r, PhyMMDData, reg)
	mdicWrite(r, PhyMMDCTRL, 1<<14|dev)
	mdicWrite(r, PhyMMDData, val)
}

func TestPHYOverMDIC(t *testing.T) {
	r := newRig(t, 0x15f3)
	id1, ok1 := mdicRead(r, PhyAddr, nicmodel.PhyID1)
	id2, ok2 := mdicRead(r, PhyAddr, nicmodel.PhyID2)
	if !ok1 || !ok2 || uint32(id1)<<16|uint32(id2) != phyIDValue {
		t.Fatalf("PHY id %04x%04x, want %08x", id1, id2, phyIDValue)
	}
	if _, ok := mdicRead(r, 2, nicmodel.PhyID1); ok {
		t.Fatal("MDIC to PHY address 2 completed without ERROR")
	}
	if bmsr, _ := mdicRead(r, PhyAddr, nicmodel.PhyBMSR); bmsr&nicmodel.BmsrLinkStatus == 0 {
		t.Fatalf("BMSR %#x: no link", bmsr)
	}
	// Withdraw the 2.5G advertisement: the link renegotiates at 1000.
	mmdWrite(r, MMDAN, MMDMGBTCtrl, 0)
	if up, mbps := r.nic.Link(); !up || mbps != 1000 {
		t.Fatalf("without 2.5G advertised: link %v %d, want 1000", up, mbps)
	}
	// Withdraw 1000 too: 100.
	mdicWrite(r, nicmodel.PhyGBCR, 0)
	if s := r.Regs.Read32(nicmodel.STATUS); s&StatusSpeedMask != StatusSpeed100 {
		t.Fatalf("STATUS %#x, want 100 Mb/s", s)
	}
	// Power down: no link.
	mdicWrite(r, nicmodel.PhyBMCR, nicmodel.BmcrANEnable|nicmodel.BmcrPowerDown)
	if s := r.Regs.Read32(nicmodel.STATUS); s&nicmodel.StatusLU != 0 {
		t.Fatalf("STATUS %#x with the PHY powered down", s)
	}
	mdicWrite(r, nicmodel.PhyBMCR, nicmodel.BmcrANEnable)
	mdicWrite(r, nicmodel.PhyGBCR, nicmodel.Gbcr1000FD)
	mmdWrite(r, MMDAN, MMDMGBTCtrl, MGBTCtrl2500)
	if s := r.Regs.Read32(nicmodel.STATUS); s&StatusSpeed2500 == 0 {
		t.Fatalf("STATUS %#x, want 2.5 Gb/s again", s)
	}
	mdicWrite(r, PhyMMDCTRL, MMDAN)
	mdicWrite(r, PhyMMDData, MMDMGBTStat)
	mdicWrite(r, PhyMMDCTRL, 1<<14|MMDAN)
	if v, _ := mdicRead(r, PhyAddr, PhyMMDData); v&MGBTStat2500LP == 0 {
		t.Fatalf("MMD 7.0x21 = %#x, want the partner's 2.5G ability", v)
	}
}

func TestQueueRegisterLayout(t *testing.T) {
	r := newRig(t, 0x15f3)
	for q := range Queues {
		r.Regs.Write32(0xc000+0x40*uint32(q), 0x1000*uint32(q+1)+0x7f)
		r.Regs.Write32(0xe008+0x40*uint32(q), 0x12345)
		r.Regs.Write32(0xc028+0x40*uint32(q), DctlEnable|DctlSWFlush)
	}
	for q := range Queues {
		if v := r.Regs.Read32(RxQ(RDBAL, q)); v != 0x1000*uint32(q+1) {
			t.Errorf("RDBAL%d = %#x: low 7 bits must read 0", q, v)
		}
		if v := r.Regs.Read32(TxQ(TDLEN, q)); v != 0x12300 {
			t.Errorf("TDLEN%d = %#x: a multiple of 128 bytes", q, v)
		}
		if v := r.Regs.Read32(RxQ(RXDCTL, q)); v != DctlEnable {
			t.Errorf("RXDCTL%d = %#x: SWFLUSH must self-clear", q, v)
		}
	}
}

func TestStatisticsClearOnRead(t *testing.T) {
	r := newRig(t, 0x15f3)
	r.setupRx(0, 8, 2048, SrrctlDescAdvOne, nicmodel.RctlSECRC)
	f := udpFrame(false, ourMAC, payloadBytes(200, 1), true)
	for i := range 3 {
		r.Wire.B().Send(f)
		r.armRx(0, i)
	}
	wantBytes := uint32(3 * (len(f) + fcsLen))
	if v := r.Regs.Read32(nicmodel.GPRC); v != 3 {
		t.Fatalf("GPRC %d, want 3", v)
	}
	if v := r.Regs.Read32(nicmodel.GPRC); v != 0 {
		t.Fatalf("GPRC %d on the second read, want 0", v)
	}
	if lo := r.Regs.Read32(nicmodel.GORCL); lo != wantBytes {
		t.Fatalf("GORCL %d, want %d", lo, wantBytes)
	}
	if lo := r.Regs.Read32(nicmodel.GORCL); lo != wantBytes {
		t.Fatal("reading GORCL alone cleared it")
	}
	r.Regs.Read32(nicmodel.GORCH)
	if lo := r.Regs.Read32(nicmodel.GORCL); lo != 0 {
		t.Fatalf("GORCL %d after reading GORCH, want 0", lo)
	}
	bin := nicmodel.PRC64 + 4*uint32(nicmodel.SizeBin(len(f)+fcsLen))
	if v := r.Regs.Read32(bin); v != 3 {
		t.Fatalf("size bin %#x = %d, want 3", bin, v)
	}
	r.Regs.Write32(nicmodel.TPR, 99)
	if v := r.Regs.Read32(nicmodel.TPR); v != 3 {
		t.Fatalf("TPR %d: statistics are read-only", v)
	}
}

func TestLegacyInterruptMode(t *testing.T) {
	r := newRig(t, 0x15f3)
	r.Regs.Read32(ICR)
	r.Regs.Write32(nicmodel.IVAR0, nicmodel.IvarValid|1) // queue 0 RX -> EICR bit 1
	r.Regs.Write32(IMS, nicmodel.IntRXT0|nicmodel.IntTXDW)
	r.setupRx(0, 8, 2048, SrrctlDescAdvOne, rctlStd)
	r.setupTx(0, 8)
	before := r.nic.Counters().Interrupts
	r.Wire.B().Send(udpFrame(false, ourMAC, payloadBytes(64, 1), true))
	if r.nic.Counters().Interrupts != before+1 {
		t.Fatal("no interrupt for a received frame")
	}
	if v := r.Regs.Read32(nicmodel.EICR); v != 1<<1 {
		t.Fatalf("EICR %#x, want bit 1 from IVAR", v)
	}
	if v := r.Regs.Read32(nicmodel.EICR); v != 0 {
		t.Fatalf("EICR %#x: not cleared by the read in INTx/MSI mode", v)
	}
	icr := r.Regs.Read32(ICR)
	if icr != nicmodel.IntRXT0|nicmodel.IntAsserted {
		t.Fatalf("ICR %#x, want RXT0 and INT_ASSERTED", icr)
	}
	if v := r.Regs.Read32(ICR); v != 0 {
		t.Fatalf("ICR %#x after the read", v)
	}
	r.send(0, udpFrame(false, peerMAC, payloadBytes(64, 1), true), nil, 0, 0)
	r.kickTx(0)
	if icr := r.Regs.Read32(ICR); icr&(nicmodel.IntTXDW|nicmodel.IntTXQE) != nicmodel.IntTXDW|nicmodel.IntTXQE || icr&nicmodel.IntAsserted == 0 {
		t.Fatalf("ICR %#x after a transmit with RS, want TXDW and TXQE asserted", icr)
	}
	// With RXT0 masked, a frame latches the cause without asserting.
	r.Regs.Write32(IMC, nicmodel.IntRXT0)
	r.Wire.B().Send(udpFrame(false, ourMAC, payloadBytes(64, 1), true))
	if icr := r.Regs.Read32(ICR); icr != nicmodel.IntRXT0 {
		t.Fatalf("ICR %#x with RXT0 masked", icr)
	}
	// EEC is EECD under its datasheet name.
	if a, b := r.Regs.Read32(EEC), r.Regs.Read32(nicmodel.EECD); a != b || a&nicmodel.EecdAutoRd == 0 {
		t.Fatalf("EEC %#x, EECD %#x", a, b)
	}
}
