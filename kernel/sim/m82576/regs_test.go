package m82576

import (
	"testing"
	"time"

	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/nicmodel"
	"github.com/ether9/ether9/kernel/sim/vtd"
)

func TestPCIIdentityAndBARs(t *testing.T) {
	m, err := sim.New(sim.Config{VTd: vtd.QEMU()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Plug(m, nicAddr, Options{}); err != nil {
		t.Fatal(err)
	}
	id, _ := m.Bus.ReadConfig(nicAddr, 0, 4)
	if id != 0x10c98086 {
		t.Fatalf("id %#x, want 0x10c98086", id)
	}
	class, _ := m.Bus.ReadConfig(nicAddr, 8, 4)
	if class>>8 != ClassEthernet {
		t.Errorf("class %#x", class>>8)
	}
	sizes := map[int]uint32{0: mmioSize, 2: nicmodel.IOSize, 3: msixSize}
	for bar, size := range sizes {
		off := 0x10 + 4*bar
		m.Bus.WriteConfig(nicAddr, off, 4, 0xffffffff)
		v, _ := m.Bus.ReadConfig(nicAddr, off, 4)
		mask := uint32(0xfffffff0)
		if bar == 2 {
			mask = 0xfffffffc
			if v&1 != 1 {
				t.Errorf("BAR2 is not I/O: %#x", v)
			}
		}
		if got := ^(v & mask) + 1; got != size {
			t.Errorf("BAR%d size %#x, want %#x", bar, got, size)
		}
	}
	caps := map[uint8]bool{}
	for p, _ := m.Bus.ReadConfig(nicAddr, 0x34, 1); p != 0; {
		id, _ := m.Bus.ReadConfig(nicAddr, int(p), 1)
		caps[uint8(id)] = true
		next, _ := m.Bus.ReadConfig(nicAddr, int(p)+1, 1)
		p = next
	}
	for _, c := range []uint8{nicmodel.CapPM, nicmodel.CapMSI, nicmodel.CapMSIX, nicmodel.CapPCIe} {
		if !caps[c] {
			t.Errorf("capability %#x missing (have %v)", c, caps)
		}
	}
}

func TestResetAndNVM(t *testing.T) {
	r := newRig(t)
	g := r.Regs
	want := uint32(ourMAC[0]) | uint32(ourMAC[1])<<8 | uint32(ourMAC[2])<<16 | uint32(ourMAC[3])<<24
	if v := g.Read32(nicmodel.RAL0); v != want {
		t.Errorf("RAL0 %#x, want %#x", v, want)
	}
	if v := g.Read32(nicmodel.RAL0 + 4); v != nicmodel.RahAV|uint32(ourMAC[4])|uint32(ourMAC[5])<<8 {
		t.Errorf("RAH0 %#x", v)
	}
	var sum uint16
	for a := range uint32(nicmodel.NVMChecksumWord + 1) {
		g.Write32(nicmodel.EERD, a<<nicmodel.EerdAddrSh|nicmodel.EerdStart)
		v := g.Read32(nicmodel.EERD)
		if v&nicmodel.EerdDone == 0 {
			t.Fatalf("EERD word %d not done: %#x", a, v)
		}
		w := uint16(v >> nicmodel.EerdDataSh)
		if a < 3 && w != uint16(ourMAC[2*a])|uint16(ourMAC[2*a+1])<<8 {
			t.Errorf("NVM word %d = %#x", a, w)
		}
		sum += w
	}
	if sum != nicmodel.NVMSum {
		t.Errorf("NVM checksum %#x, want %#x", sum, nicmodel.NVMSum)
	}
	if v := g.Read32(nicmodel.EECD); v&(nicmodel.EecdPres|nicmodel.EecdAutoRd) != nicmodel.EecdPres|nicmodel.EecdAutoRd {
		t.Errorf("EECD %#x", v)
	}

	g.Write32(nicmodel.RCTL, nicmodel.RctlEN|nicmodel.RctlUPE)
	g.Write32(nicmodel.MRQC, MrqcRSS)
	g.Write32(RDBAL+3*queueSize, 0x1000)
	g.Write32(nicmodel.CTRL, g.Read32(nicmodel.CTRL)|nicmodel.CtrlRST)
	if v := g.Read32(nicmodel.CTRL); v&nicmodel.CtrlRST != 0 || v&nicmodel.CtrlSLU != 0 {
		t.Errorf("CTRL after reset %#x", v)
	}
	for _, reg := range []uint32{nicmodel.RCTL, nicmodel.MRQC, RDBAL + 3*queueSize} {
		if v := g.Read32(reg); v != 0 {
			t.Errorf("register %#x = %#x after reset", reg, v)
		}
	}
	if g.Read32(RXDCTL)&RxdctlEnable == 0 || g.Read32(RXDCTL+queueSize)&RxdctlEnable != 0 {
		t.Error("after reset only RX queue 0 is enabled")
	}
	if v := g.Read32(nicmodel.VET); v != 0x8100 {
		t.Errorf("VET %#x", v)
	}
	if r.nic.Counters().Resets != 2 {
		t.Errorf("resets %d", r.nic.Counters().Resets)
	}
}

func TestQueueRegisterAliases(t *testing.T) {
	r := newRig(t)
	g := r.Regs
	g.Write32(0x2800+0x100*2, 0xabcd0000) // RDBAL(2)
	if v := g.Read32(RDBAL + 2*queueSize); v != 0xabcd0000 {
		t.Errorf("RDBAL(2) via 0xc080 = %#x", v)
	}
	g.Write32(TDLEN+1*queueSize, 4096)
	if v := g.Read32(0x3808 + 0x100); v != 4096 {
		t.Errorf("TDLEN(1) via 0x3908 = %#x", v)
	}
	g.Write32(RDLEN, 0x12345) // 128-byte granularity
	if v := g.Read32(RDLEN); v != 0x12300 {
		t.Errorf("RDLEN %#x", v)
	}
	g.Write32(nicmodel.IMS, nicmodel.IntLSC)
	if v := g.Read32(0x1508); v != nicmodel.IntLSC {
		t.Errorf("IMS via 0x1508 = %#x", v)
	}
}

func TestMDIC(t *testing.T) {
	r := newRig(t)
	g := r.Regs
	read := func(reg uint32) uint32 {
		g.Write32(nicmodel.MDIC, nicmodel.MdicOpRead|phyAddress<<nicmodel.MdicPhySh|reg<<nicmodel.MdicRegSh)
		v := g.Read32(nicmodel.MDIC)
		if v&nicmodel.MdicReady == 0 || v&nicmodel.MdicError != 0 {
			t.Fatalf("MDIC read of %d: %#x", reg, v)
		}
		return v & 0xffff
	}
	if id := read(nicmodel.PhyID1)<<16 | read(nicmodel.PhyID2); id&^0xf != 0x02a80390 {
		t.Errorf("PHY id %#x", id)
	}
	if read(nicmodel.PhyBMSR)&nicmodel.BmsrLinkStatus == 0 {
		t.Error("BMSR link down with the cable in")
	}
	g.Write32(nicmodel.MDIC, nicmodel.MdicOpRead|2<<nicmodel.MdicPhySh)
	if g.Read32(nicmodel.MDIC)&nicmodel.MdicError == 0 {
		t.Error("no error for PHY address 2")
	}
	// Powering the PHY down drops the link.
	g.Write32(nicmodel.MDIC, nicmodel.MdicOpWrite|phyAddress<<nicmodel.MdicPhySh|nicmodel.PhyBMCR<<nicmodel.MdicRegSh|0x1140|nicmodel.BmcrPowerDown)
	if g.Read32(nicmodel.STATUS)&nicmodel.StatusLU != 0 {
		t.Error("link up with the PHY powered down")
	}
	g.Write32(nicmodel.MDIC, nicmodel.MdicOpWrite|phyAddress<<nicmodel.MdicPhySh|nicmodel.PhyBMCR<<nicmodel.MdicRegSh|nicmodel.BmcrReset)
	if g.Read32(nicmodel.STATUS)&nicmodel.StatusLU == 0 {
		t.Error("link down after PHY reset")
	}
}

func TestStatisticsReadToClear(t *testing.T) {
	r := newRig(t)
	r.setupRx(0, 8, 2048)
	f := udp4(srcIP4, dstIP4, 1, 2, make([]byte, 100))
	for range 3 {
		r.Inject(f)
	}
	g := r.Regs
	if v := g.Read32(nicmodel.GPRC); v != 3 {
		t.Errorf("GPRC %d", v)
	}
	if v := g.Read32(nicmodel.GPRC); v != 0 {
		t.Errorf("GPRC not cleared: %d", v)
	}
	lo := g.Read32(nicmodel.GORCL)
	if lo != 3*uint32(len(f)+4) {
		t.Errorf("GORCL %d, want %d", lo, 3*(len(f)+4))
	}
	if g.Read32(nicmodel.GORCL) != lo {
		t.Error("reading GORCL cleared it")
	}
	g.Read32(nicmodel.GORCH)
	if v := g.Read32(nicmodel.GORCL); v != 0 {
		t.Errorf("GORCL %d after reading GORCH", v)
	}
	if v := g.Read32(PQGPRC); v != 3 {
		t.Errorf("PQGPRC(0) %d", v)
	}
	if v := g.Read32(nicmodel.PRC64 + 8); v != 3 { // 128-255 bytes
		t.Errorf("PRC255 %d", v)
	}
	g.Write32(nicmodel.GPTC, 5)
	if v := g.Read32(nicmodel.GPTC); v != 0 {
		t.Errorf("GPTC writable: %d", v)
	}
}

func TestLinkChangeRaisesLSC(t *testing.T) {
	r := newRig(t)
	g := r.Regs
	irq := r.M.IRQ(nicAddr)
	if v := g.Read32(nicmodel.STATUS); v&nicmodel.StatusLU == 0 || v>>nicmodel.StatusSpeedSh&3 != 2 || v&nicmodel.StatusFD == 0 {
		t.Fatalf("STATUS %#x: want link up at 1000 full duplex", v)
	}
	g.Read32(nicmodel.ICR)
	g.Write32(nicmodel.IMS, nicmodel.IntLSC)
	before := irq.Raised()
	r.nic.SetLink(false, 1000)
	if g.Read32(nicmodel.STATUS)&nicmodel.StatusLU != 0 {
		t.Error("link up after the cable was pulled")
	}
	if irq.Raised() == before {
		t.Error("no interrupt for LSC")
	}
	if v := g.Read32(nicmodel.ICR); v&(nicmodel.IntLSC|nicmodel.IntAsserted) != nicmodel.IntLSC|nicmodel.IntAsserted {
		t.Errorf("ICR %#x", v)
	}
	if v := g.Read32(nicmodel.ICR); v != 0 {
		t.Errorf("ICR %#x after read", v)
	}
	r.nic.SetLink(true, 1000)
	if !irq.Wait(time.Millisecond) {
		t.Error("no interrupt on link up")
	}
	if g.Read32(nicmodel.ICR)&nicmodel.IntLSC == 0 {
		t.Error("no LSC on link up")
	}
	// A 100 Mb/s partner: STATUS says so, and LSC marks the change.
	g.Read32(nicmodel.ICR)
	if err := r.nic.SetLink(true, 100); err != nil {
		t.Fatal(err)
	}
	if v := g.Read32(nicmodel.STATUS); v>>nicmodel.StatusSpeedSh&3 != 1 || g.Read32(nicmodel.ICR)&nicmodel.IntLSC == 0 {
		t.Errorf("STATUS %#x at 100 Mb/s, or no LSC", v)
	}
	if err := r.nic.SetLink(true, 40000); err == nil {
		t.Error("40 Gb/s accepted")
	}
	// Without SLU the MAC does not bring the link up.
	g.Write32(nicmodel.CTRL, g.Read32(nicmodel.CTRL)&^nicmodel.CtrlSLU)
	if g.Read32(nicmodel.STATUS)&nicmodel.StatusLU != 0 {
		t.Error("link up without CTRL.SLU")
	}
	r.Wire.SetLink(false, 1000)
	g.Write32(nicmodel.CTRL, g.Read32(nicmodel.CTRL)|nicmodel.CtrlSLU)
	if g.Read32(nicmodel.STATUS)&nicmodel.StatusLU != 0 {
		t.Error("link up with the wire down")
	}
}

func TestInterruptVectors(t *testing.T) {
	r := newRig(t)
	g := r.Regs
	r.setupRx(0, 8, 2048)
	r.setupRx(9, 8, 2048)
	// RX queue 9 is byte 2 of IVAR(1); RX queue 0 byte 0 of IVAR(0);
	// TX queue 0 byte 1 of IVAR(0).
	g.Write32(nicmodel.IVAR0+4, (nicmodel.IvarValid|5)<<16)
	g.Write32(nicmodel.IVAR0, nicmodel.IvarValid|3|(nicmodel.IvarValid|4)<<8)
	g.Read32(nicmodel.ICR)
	g.Read32(nicmodel.EICR)
	g.Write32(nicmodel.EIMS, 1<<3|1<<5)

	f := udp4(srcIP4, dstIP4, 1, 2, make([]byte, 64))
	r.Inject(f)
	if !r.M.IRQ(nicAddr).Level() {
		t.Error("INTx not asserted with EICR bit 3 pending and enabled")
	}
	// ICR first: its read leaves the queue bits in EICR.
	if v := g.Read32(nicmodel.ICR); v&IntRXDW == 0 || v&nicmodel.IntAsserted == 0 {
		t.Errorf("ICR %#x, want RXDW and asserted", v)
	}
	if v := g.Read32(nicmodel.EICR); v != 1<<3 {
		t.Errorf("EICR %#x after RX on queue 0, want vector 3", v)
	}
	if r.M.IRQ(nicAddr).Level() {
		t.Error("INTx still asserted with no cause pending")
	}

	// MSI-X mode with auto-clear: the vector's EICR bit clears as it
	// fires and EIAM masks it.
	g.Write32(nicmodel.GPIE, nicmodel.GpieMultiMSIX|nicmodel.GpieEIAME)
	g.Write32(nicmodel.EIAC, 1<<5)
	g.Write32(nicmodel.EIAM, 1<<5)
	irq := r.M.IRQ(nicAddr)
	before := irq.Raised()
	// Steer to queue 9 through RSS (the filters only name queues 0-7).
	g.Write32(nicmodel.RXCSUM, nicmodel.RxcsumPCSD)
	g.Write32(nicmodel.MRQC, MrqcRSS|nicmodel.MrqcIPv4)
	for i := range uint32(32) {
		g.Write32(nicmodel.RETA+4*i, 0x09090909)
	}
	r.Inject(f)
	if irq.Raised() == before {
		t.Error("no interrupt for queue 9")
	}
	if v := g.Read32(nicmodel.EICR); v&(1<<5) != 0 {
		t.Errorf("EICR %#x: vector 5 not auto-cleared", v)
	}
	if v := g.Read32(nicmodel.EIMS); v&(1<<5) != 0 || v&(1<<3) == 0 {
		t.Errorf("EIMS %#x: want vector 5 auto-masked, 3 kept", v)
	}
	if r.nic.Counters().RxQueue[9] != 1 {
		t.Errorf("queue 9 frames %d", r.nic.Counters().RxQueue[9])
	}
	// EICS sets causes by software.
	g.Write32(nicmodel.EIMS, 1<<7)
	g.Write32(nicmodel.EICS, 1<<7)
	if v := g.Read32(nicmodel.EICR); v&(1<<7) == 0 {
		t.Errorf("EICR %#x after EICS", v)
	}
}
