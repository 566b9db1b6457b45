package m82574

import (
	"encoding/binary"
	"testing"

	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/nicmodel"
)

func TestConfigSpace(t *testing.T) {
	for _, tc := range []struct {
		pers     Personality
		caps     []uint8
		ioBAR    bool
		msixSize uint64
	}{
		{M82574L, []uint8{nicmodel.CapPM, nicmodel.CapMSI, nicmodel.CapPCIe, nicmodel.CapMSIX}, true, msixSize},
		{I219LM, []uint8{nicmodel.CapPM, nicmodel.CapMSI, nicmodel.CapAF}, false, 0},
	} {
		t.Run(tc.pers.Name, func(t *testing.T) {
			r := newRig(t, tc.pers)
			cfg := func(off, size int) uint32 {
				v, err := r.M.Bus.ReadConfig(nicAddr, off, size)
				if err != nil {
					t.Fatal(err)
				}
				return v
			}
			if v, d := cfg(0, 2), cfg(2, 2); v != 0x8086 || d != uint32(tc.pers.Device) {
				t.Fatalf("id %04x:%04x, want 8086:%04x", v, d, tc.pers.Device)
			}
			if c := cfg(8, 4) >> 8; c != ClassEthernet {
				t.Fatalf("class %06x", c)
			}
			var got []uint8
			for off := int(cfg(0x34, 1)); off != 0 && len(got) < 16; off = int(cfg(off+1, 1)) {
				got = append(got, uint8(cfg(off, 1)))
			}
			if len(got) != len(tc.caps) {
				t.Fatalf("capabilities %x, want %x", got, tc.caps)
			}
			for i := range got {
				if got[i] != tc.caps[i] {
					t.Fatalf("capabilities %x, want %x", got, tc.caps)
				}
			}
			if kind, size, _ := r.nic.Config().BAR(0); size != mmioSize || kind == 0 {
				t.Fatalf("BAR0 kind %v size %d", kind, size)
			}
			_, ioSz, _ := r.nic.Config().BAR(barIO)
			_, xSz, _ := r.nic.Config().BAR(barMSIX)
			if (ioSz == nicmodel.IOSize) != tc.ioBAR || xSz != tc.msixSize {
				t.Fatalf("I/O BAR size %d, MSI-X BAR size %d", ioSz, xSz)
			}
		})
	}
}

func mac(r *rig) [6]byte {
	var m [6]byte
	binary.LittleEndian.PutUint32(m[0:], r.Regs.Read32(nicmodel.RAL0))
	binary.LittleEndian.PutUint16(m[4:], uint16(r.Regs.Read32(nicmodel.RAL0+4)))
	return m
}

func TestResetReloadsMACAndClears(t *testing.T) {
	r := newRig(t, M82574L)
	if m := mac(r); m != ourMAC || r.Regs.Read32(nicmodel.RAL0+4)&nicmodel.RahAV == 0 {
		t.Fatalf("RAL0/RAH0 %x valid=%v, want %x valid", m, r.Regs.Read32(nicmodel.RAL0+4)&nicmodel.RahAV != 0, ourMAC)
	}
	r.setupRx(nicmodel.RctlBAM|nicmodel.RctlSECRC, true)
	r.Wire.B().Send(udp4(ourMAC, payloadBytes(100, 1)))
	r.Regs.Write32(nicmodel.RAL0, 0xdeadbeef)
	r.Regs.Write32(nicmodel.IMS, nicmodel.IntRXT0)
	r.Regs.Write32(nicmodel.MTA, 0xffffffff)

	r.Regs.Write32(nicmodel.CTRL, r.Regs.Read32(nicmodel.CTRL)|nicmodel.CtrlRST)
	if v := r.Regs.Read32(nicmodel.CTRL); v&nicmodel.CtrlRST != 0 {
		t.Fatalf("CTRL.RST did not self-clear: %#x", v)
	}
	for _, reg := range []uint32{nicmodel.RCTL, RDLEN, RDT, nicmodel.IMS, nicmodel.MTA, nicmodel.GPRC, nicmodel.TPR} {
		if v := r.Regs.Read32(reg); v != 0 {
			t.Errorf("register %#x is %#x after reset, want 0", reg, v)
		}
	}
	if m := mac(r); m != ourMAC {
		t.Fatalf("RAL0/RAH0 after reset %x, want %x from the NVM", m, ourMAC)
	}
	if v := r.Regs.Read32(nicmodel.TCTL); v&nicmodel.TctlPSP == 0 || v&nicmodel.TctlEN != 0 {
		t.Fatalf("TCTL after reset %#x", v)
	}
	if c := r.nic.Counters(); c.Resets != 2 || c.RxFrames != 1 {
		t.Fatalf("counters %+v", c)
	}
}

func TestNVMThroughEERD(t *testing.T) {
	r := newRig(t, M82574L)
	read := func(w uint32) uint16 {
		r.Regs.Write32(nicmodel.EERD, w<<nicmodel.EerdAddrSh|nicmodel.EerdStart)
		v := r.Regs.Read32(nicmodel.EERD)
		if v&nicmodel.EerdDone == 0 {
			t.Fatalf("EERD word %#x not done: %#x", w, v)
		}
		return uint16(v >> nicmodel.EerdDataSh)
	}
	var got [6]byte
	for i := range 3 {
		binary.LittleEndian.PutUint16(got[2*i:], read(uint32(i)))
	}
	if got != ourMAC {
		t.Fatalf("NVM MAC %x, want %x", got, ourMAC)
	}
	var sum uint16
	for w := range uint32(nicmodel.NVMChecksumWord + 1) {
		sum += read(w)
	}
	if sum != nicmodel.NVMSum {
		t.Fatalf("NVM words 0..0x3f sum to %#x, want %#x", sum, nicmodel.NVMSum)
	}
	if d := read(NvmDeviceID); d != 0x10d3 {
		t.Fatalf("NVM device id %#x", d)
	}
	if v := r.Regs.Read32(nicmodel.EECD); v&nicmodel.EecdPres == 0 || v&nicmodel.EecdAutoRd == 0 {
		t.Fatalf("EECD %#x: NVM present and auto-read done expected", v)
	}

	// The I219 keeps its NVM in the platform flash: no EERD.
	i := newRig(t, I219LM)
	i.Regs.Write32(nicmodel.EERD, nicmodel.EerdStart)
	if v := i.Regs.Read32(nicmodel.EERD); v&nicmodel.EerdDone != 0 {
		t.Fatalf("I219 EERD completed: %#x", v)
	}
	if m := mac(i); m != ourMAC {
		t.Fatalf("I219 RAL0/RAH0 %x, want %x", m, ourMAC)
	}
}

func mdic(t *testing.T, r *rig, phy, reg uint32, write bool, v uint16) (uint16, bool) {
	t.Helper()
	op := uint32(nicmodel.MdicOpRead)
	if write {
		op = nicmodel.MdicOpWrite
	}
	r.Regs.Write32(nicmodel.MDIC, op|phy<<nicmodel.MdicPhySh|reg<<nicmodel.MdicRegSh|uint32(v))
	out := r.Regs.Read32(nicmodel.MDIC)
	if out&nicmodel.MdicReady == 0 {
		t.Fatalf("MDIC not ready: %#x", out)
	}
	return uint16(out), out&nicmodel.MdicError == 0
}

func TestLinkStatusAndPHY(t *testing.T) {
	r := newRig(t, M82574L)
	// Attached to a wire at 1000 Mb/s: STATUS reads what QEMU's model reads.
	if s := r.Regs.Read32(nicmodel.STATUS); s != 0x00080283 {
		t.Fatalf("STATUS %#08x, want 0x00080283", s)
	}
	if icr := r.Regs.Read32(nicmodel.ICR); icr&nicmodel.IntLSC == 0 {
		t.Fatalf("ICR %#x: link up should have latched LSC", icr)
	}
	id1, ok1 := mdic(t, r, 1, nicmodel.PhyID1, false, 0)
	id2, ok2 := mdic(t, r, 1, nicmodel.PhyID2, false, 0)
	if !ok1 || !ok2 || uint32(id1)<<16|uint32(id2) != M82574L.PHYID {
		t.Fatalf("PHY id %04x %04x", id1, id2)
	}
	if bmsr, _ := mdic(t, r, 1, nicmodel.PhyBMSR, false, 0); bmsr&nicmodel.BmsrLinkStatus == 0 {
		t.Fatalf("BMSR %#x: link down", bmsr)
	}
	if gbsr, _ := mdic(t, r, 1, nicmodel.PhyGBSR, false, 0); gbsr&nicmodel.GbsrLP1000FD == 0 {
		t.Fatalf("1000BASE-T status %#x", gbsr)
	}
	if _, ok := mdic(t, r, 5, nicmodel.PhyBMSR, false, 0); ok {
		t.Fatal("MDIC to a PHY address with no PHY did not set ERROR")
	}

	r.Regs.Write32(nicmodel.IMS, nicmodel.IntLSC)
	before := r.irq.Raised()
	if err := r.Wire.SetLink(true, 100); err != nil {
		t.Fatal(err)
	}
	if s := r.Regs.Read32(nicmodel.STATUS); s&nicmodel.StatusLU == 0 || s>>nicmodel.StatusSpeedSh&3 != 1 {
		t.Fatalf("STATUS %#x after renegotiating at 100", s)
	}
	if r.irq.Raised() == before || r.Regs.Read32(nicmodel.ICR)&nicmodel.IntLSC == 0 {
		t.Fatal("speed change raised no LSC interrupt")
	}
	if gbsr, _ := mdic(t, r, 1, nicmodel.PhyGBSR, false, 0); gbsr != 0 {
		t.Fatalf("1000BASE-T status %#x at 100 Mb/s", gbsr)
	}
	if err := r.nic.SetLink(false, 100); err != nil {
		t.Fatal(err)
	}
	if s := r.Regs.Read32(nicmodel.STATUS); s&nicmodel.StatusLU != 0 {
		t.Fatalf("STATUS %#x with the cable out", s)
	}
	if err := r.nic.SetLink(true, 1000); err != nil {
		t.Fatal(err)
	}
	// Powering the PHY down takes the link down.
	bmcr, _ := mdic(t, r, 1, nicmodel.PhyBMCR, false, 0)
	r.Regs.Read32(nicmodel.ICR)
	mdic(t, r, 1, nicmodel.PhyBMCR, true, bmcr|nicmodel.BmcrPowerDown)
	if s := r.Regs.Read32(nicmodel.STATUS); s&nicmodel.StatusLU != 0 {
		t.Fatalf("STATUS %#x with the PHY powered down", s)
	}
	if r.Regs.Read32(nicmodel.ICR)&nicmodel.IntLSC == 0 {
		t.Fatal("power-down raised no LSC")
	}
	mdic(t, r, 1, nicmodel.PhyBMCR, true, bmcr)
	if s := r.Regs.Read32(nicmodel.STATUS); s&nicmodel.StatusLU == 0 {
		t.Fatalf("STATUS %#x with the PHY powered up again", s)
	}
	// Advertising no gigabit settles the link at 100.
	mdic(t, r, 1, nicmodel.PhyGBCR, true, 0)
	if s := r.Regs.Read32(nicmodel.STATUS); s>>nicmodel.StatusSpeedSh&3 != 1 {
		t.Fatalf("STATUS %#x: gigabit not advertised, link should be at 100", s)
	}
	if err := r.nic.SetLink(true, 2500); err == nil {
		t.Fatal("82574 accepted a 2500 Mb/s link")
	}
}

func TestInterruptRegisters(t *testing.T) {
	r := newRig(t, M82574L)
	r.Regs.Read32(nicmodel.ICR) // clear the LSC of attach (IMS is 0: read clears)
	if v := r.Regs.Read32(nicmodel.ICR); v != 0 {
		t.Fatalf("ICR %#x after a clearing read", v)
	}

	// A masked cause is latched but asserts nothing; reading with IMS
	// non-zero and nothing asserted does not clear it.
	r.Regs.Write32(nicmodel.IMS, nicmodel.IntRXT0)
	before := r.irq.Raised()
	r.Regs.Write32(nicmodel.ICS, nicmodel.IntTXDW)
	if r.irq.Raised() != before {
		t.Fatal("a masked cause raised the interrupt")
	}
	if v := r.Regs.Read32(nicmodel.ICR); v != nicmodel.IntTXDW {
		t.Fatalf("ICR %#x, want TXDW without INT_ASSERTED", v)
	}
	if v := r.Regs.Read32(nicmodel.ICR); v != nicmodel.IntTXDW {
		t.Fatalf("ICR %#x: a read without INT_ASSERTED must not clear", v)
	}
	r.Regs.Write32(nicmodel.ICR, nicmodel.IntTXDW) // write 1 to clear
	if v := r.Regs.Read32(nicmodel.ICR); v != 0 {
		t.Fatalf("ICR %#x after write-1-to-clear", v)
	}

	// An enabled cause asserts, and the read clears everything.
	r.Regs.Write32(nicmodel.ICS, nicmodel.IntRXT0|nicmodel.IntTXQE)
	if r.irq.Raised() != before+1 {
		t.Fatal("an enabled cause did not raise the interrupt")
	}
	if v := r.Regs.Read32(nicmodel.ICR); v != nicmodel.IntAsserted|nicmodel.IntRXT0|nicmodel.IntTXQE {
		t.Fatalf("ICR %#x", v)
	}
	if v := r.Regs.Read32(nicmodel.ICR); v != 0 {
		t.Fatalf("ICR %#x after an asserted read", v)
	}
	if v := r.Regs.Read32(nicmodel.IMS); v != nicmodel.IntRXT0 {
		t.Fatalf("IMS %#x", v)
	}
	// A pending cause raises when it gets enabled.
	r.Regs.Write32(nicmodel.ICS, nicmodel.IntTXDW)
	r.Regs.Write32(nicmodel.IMS, nicmodel.IntTXDW)
	if r.irq.Raised() != before+2 {
		t.Fatal("enabling a pending cause did not raise the interrupt")
	}
	r.Regs.Read32(nicmodel.ICR)
	r.Regs.Write32(nicmodel.IMC, nicmodel.IntTXDW)
	if v := r.Regs.Read32(nicmodel.IMS); v != nicmodel.IntRXT0 {
		t.Fatalf("IMS %#x after IMC", v)
	}

	// With CTRL_EXT.IAME the asserted read masks the causes in IAM.
	r.Regs.Write32(nicmodel.CTRL_EXT, CtrlExtIAME)
	r.Regs.Write32(nicmodel.IAM, nicmodel.IntRXT0)
	r.Regs.Write32(nicmodel.ICS, nicmodel.IntRXT0)
	r.Regs.Read32(nicmodel.ICR)
	if v := r.Regs.Read32(nicmodel.IMS); v != 0 {
		t.Fatalf("IMS %#x: auto-mask did not clear RXT0", v)
	}
}

func TestStatisticsReadToClear(t *testing.T) {
	r := newRig(t, M82574L)
	r.setupRx(nicmodel.RctlBAM|nicmodel.RctlSECRC, true)
	const frames = 5
	f := udp4(ourMAC, payloadBytes(200, 3))
	for range frames {
		r.Wire.B().Send(f)
		r.Regs.Write32(RDT, (r.Regs.Read32(RDT)+1)%uint32(ringSize))
	}
	if v := r.Regs.Read32(nicmodel.GPRC); v != frames {
		t.Fatalf("GPRC %d, want %d", v, frames)
	}
	if v := r.Regs.Read32(nicmodel.GPRC); v != 0 {
		t.Fatalf("GPRC %d after a read, want 0", v)
	}
	octets := uint32(frames * (len(f) + nicmodel.FCSLen))
	if lo := r.Regs.Read32(nicmodel.GORCL); lo != octets {
		t.Fatalf("GORCL %d, want %d", lo, octets)
	}
	if lo := r.Regs.Read32(nicmodel.GORCL); lo != octets {
		t.Fatal("reading GORCL alone cleared it")
	}
	if hi := r.Regs.Read32(nicmodel.GORCH); hi != 0 {
		t.Fatalf("GORCH %d", hi)
	}
	if lo := r.Regs.Read32(nicmodel.GORCL); lo != 0 {
		t.Fatalf("GORCL %d after reading GORCH, want 0", lo)
	}
	if v := r.Regs.Read32(nicmodel.TPR); v != frames {
		t.Fatalf("TPR %d", v)
	}
	if v := r.Regs.Read32(nicmodel.PRC255); v != frames { // 242 + FCS
		t.Fatalf("PRC255 %d", v)
	}
	r.Regs.Write32(nicmodel.MPC, 1234)
	if v := r.Regs.Read32(nicmodel.MPC); v != 0 {
		t.Fatalf("MPC %d: statistics are read-only", v)
	}
}

func TestIOBARIndirection(t *testing.T) {
	r := newRig(t, M82574L)
	io, err := r.M.Bus.Regs(nicAddr, barIO)
	if err != nil {
		t.Fatal(err)
	}
	io.Write32(nicmodel.IOAddr, nicmodel.RAL0)
	if v := io.Read32(nicmodel.IOData); v != r.Regs.Read32(nicmodel.RAL0) {
		t.Fatalf("IODATA %#x, RAL0 %#x", v, r.Regs.Read32(nicmodel.RAL0))
	}
	io.Write32(nicmodel.IOAddr, nicmodel.IMS)
	io.Write32(nicmodel.IOData, nicmodel.IntLSC)
	if v := r.Regs.Read32(nicmodel.IMS); v != nicmodel.IntLSC {
		t.Fatalf("IMS %#x written through IODATA", v)
	}
}

// The model refuses DMA while bus mastering is off, as the bus does.
func TestNoDMAWithoutBusMaster(t *testing.T) {
	r := newRig(t, M82574L)
	r.setupRx(nicmodel.RctlBAM|nicmodel.RctlSECRC, true)
	if err := r.M.Bus.WriteConfig(nicAddr, 4, 2, sim.CmdMemory); err != nil {
		t.Fatal(err)
	}
	r.Wire.B().Send(udp4(ourMAC, payloadBytes(64, 0)))
	if c := r.nic.Counters(); c.RxFrames != 0 || c.RxDMAFaults == 0 {
		t.Fatalf("counters %+v: DMA must fail with bus master off", c)
	}
}

func TestMSIXTable(t *testing.T) {
	r := newRig(t, M82574L)
	x, err := r.M.Bus.Regs(nicAddr, barMSIX)
	if err != nil {
		t.Fatal(err)
	}
	for v := range msixVectors {
		if ctl := x.Read32(uint32(16*v + 12)); ctl&1 == 0 {
			t.Fatalf("vector %d not masked at reset: %#x", v, ctl)
		}
	}
	x.Write64(16, 0xfee00000_00000000|0xfee0100c)
	x.Write32(16+8, 0x4041)
	if a, d := x.Read64(16), x.Read32(16+8); a != 0xfee00000_fee0100c || d != 0x4041 {
		t.Fatalf("vector 1 address %#x data %#x", a, d)
	}
	if pba := x.Read32(msixPBA); pba != 0 {
		t.Fatalf("PBA %#x", pba)
	}
}
