package system_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"

	"github.com/ether9/ether9/boot/init/simmachine"
	"github.com/ether9/ether9/boot/init/system"
	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/iommu"
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/vtd"
	"github.com/ether9/ether9/ns/admin"
	"github.com/ether9/ether9/pci"
)

// vectorMachine starts the system on a simulated igb with no INTx lines,
// only vectors, as the metal platform has, and interrupt remapping asked
// for; platLines are the platform's own I/O APIC lines. The VT-d model
// blocks compatibility-format messages once remapping is on.
func vectorMachine(t *testing.T, platLines ...system.Line) (*simmachine.Host, *system.System, *lines) {
	t.Helper()
	return vectorMachineWith(t, vectorConfig{lines: platLines})
}

// vectorConfig is what a vectorMachine differs by.
type vectorConfig struct {
	cmdline string        // ether9.* words
	lines   []system.Line // the platform's own I/O APIC lines
	x2apic  bool          // the platform's processors run in x2APIC mode
	eim     bool          // the VT-d unit has extended interrupt mode
	// firmware leaves the unit's invalidation queue and interrupt
	// remapping on, as some server firmware does
	firmware bool
	// devices are added to the machine's bus before the system starts;
	// undecoded ones with their memory space off, as firmware leaves a
	// controller it never used.
	devices   map[pci.Addr]sim.Device
	undecoded map[pci.Addr]sim.Device
	// beneathKernel: the platform is not AfterFirmware.
	beneathKernel bool
}

// vectorMachineWith is vectorMachine as c says.
func vectorMachineWith(t *testing.T, c vectorConfig) (*simmachine.Host, *system.System, *lines) {
	t.Helper()
	unit := vtd.QEMU()
	unit.EIM = c.eim
	h, err := simmachine.New(context.Background(), simmachine.Config{NICs: []string{"igb"}, VTd: unit})
	if err != nil {
		t.Fatal(err)
	}
	if c.firmware {
		leaveQueueOn(t, h.Machine)
	}
	for a, d := range c.devices {
		if err := h.Machine.Bus.Add(a, d); err != nil {
			t.Fatal(err)
		}
	}
	for a, d := range c.undecoded {
		if err := h.Machine.Bus.Add(a, d); err != nil {
			t.Fatal(err)
		}
		if err := h.Machine.Bus.WriteConfig(a, 4, 2, 0); err != nil {
			t.Fatal(err)
		}
	}
	plat := simmachine.Platform(h.Machine)
	plat.IRQ = nil
	plat.MSI = h.Machine.MSI
	plat.RemapInterrupts = true
	plat.X2APIC = c.x2apic
	plat.AfterFirmware = !c.beneathKernel
	plat.Lines = c.lines
	opt, err := simmachine.Options(1).With(c.cmdline)
	if err != nil {
		t.Fatal(err)
	}
	if opt.Token, err = admin.ParseToken(testToken); err != nil {
		t.Fatal(err)
	}
	con := &lines{}
	sys, err := system.Start(h.Context(), plat, opt, con.logf)
	if err != nil {
		h.Close()
		t.Fatalf("start: %v\n%s", err, con)
	}
	h.System = sys
	sys.Go(h.Context(), "http", func(ctx context.Context) error {
		ln, err := gonet.ListenTCP(sys.Stack().Stack, tcpip.FullAddress{Port: 80}, ipv4.ProtocolNumber)
		if err != nil {
			return fmt.Errorf("listen :80: %s", err)
		}
		return sys.ServeStatus(ctx, ln)
	})
	t.Cleanup(func() {
		h.Close()
		if t.Failed() {
			t.Logf("console:\n%s", con)
		}
	})
	con.waitListening(t)
	return h, sys, con
}

// raised counts the interrupts on a port's vectors, through their
// remapping entries to the machine's vectors.
func raised(t *testing.T, vecs []kernel.MSI) (n uint64, remapped int) {
	t.Helper()
	for _, v := range vecs {
		if r, ok := v.(*iommu.RemappedMSI); ok {
			remapped++
			v = r.Unwrap()
		}
		sv, ok := v.(*sim.Vector)
		if !ok {
			t.Fatalf("vector %v is not the machine's", v)
		}
		n += sv.Raised()
	}
	return n, remapped
}

// carries fetches 64 KiB through the NIC and checks that its vectors
// took interrupts and none was blocked.
func carries(t *testing.T, h *simmachine.Host, sys *system.System) {
	t.Helper()
	guest, _ := simmachine.Addrs(0)
	side{peer: h.Peer, guest: guest[0]}.fetch(t, 64<<10)
	if n, _ := raised(t, sys.Ports()[0].Vectors); n == 0 {
		t.Error("no interrupt reached the NIC's vectors")
	}
	if b := h.Machine.BlockedMessages(); b != 0 {
		t.Errorf("%d interrupt messages blocked", b)
	}
}

// With remapping on, the NIC's MSI-X vectors come through entries made
// for it, and its interrupts arrive over a transfer: none is blocked.
// Without the entries the model blocks every message the NIC sends.
func TestRemappedVectors(t *testing.T) {
	h, sys, con := vectorMachine(t)
	if !strings.Contains(con.String(), "remaps interrupts, compatibility format blocked") {
		t.Fatalf("the unit does not remap interrupts")
	}
	if !regexp.MustCompile(`MSI-X, \d+ vectors \([\d ]+; remapped, entries [\d ]+\)`).MatchString(con.String()) {
		t.Errorf("the console does not name the NIC's remapping entries")
	}
	guest, _ := simmachine.Addrs(0)
	side{peer: h.Peer, guest: guest[0]}.fetch(t, 256<<10)
	ports := sys.Ports()
	if len(ports) != 1 || ports[0].Vectors == nil {
		t.Fatalf("ports %+v: want one NIC on MSI-X", ports)
	}
	n, remapped := raised(t, ports[0].Vectors)
	if remapped != len(ports[0].Vectors) {
		t.Errorf("%d of %d vectors remapped", remapped, len(ports[0].Vectors))
	}
	if n == 0 {
		t.Error("no interrupt reached the NIC's vectors over the transfer")
	}
	if b := h.Machine.BlockedMessages(); b != 0 {
		t.Errorf("%d interrupt messages blocked", b)
	}
	if f := sys.IOMMU().Stats().InterruptFaults; f != 0 {
		t.Errorf("%d interrupt faults recorded", f)
	}
}

// A platform line whose I/O APIC no unit's scope lists would go dead
// under the catch-all unit's remapping: the unit does not remap, says
// why, and the NIC's messages stay in compatibility format and arrive.
func TestRemapRefusedForUnlistedLine(t *testing.T) {
	routed := false
	h, sys, con := vectorMachine(t, system.Line{
		Name: "console", IOAPIC: 2,
		Message: iommu.Message{Addr: 0xfee00000, Data: 0x41},
		Route:   func(uint16) error { routed = true; return nil },
	})
	if !strings.Contains(con.String(), "interrupts not remapped: no unit's scope lists I/O APIC 2, which carries the console line") {
		t.Errorf("the console does not say why interrupts are not remapped")
	}
	if routed || strings.Contains(con.String(), "remapped, entries") {
		t.Error("remapped although the console line could not be")
	}
	carries(t, h, sys)
}

// The platform's line whose I/O APIC the unit lists moves onto an entry
// made for the I/O APIC's requester id, and the unit delivers its vector
// through it.
func TestRemappedLine(t *testing.T) {
	entry := -1
	h, sys, con := vectorMachine(t, system.Line{
		Name: "console", IOAPIC: sim.IOAPICID,
		Message: iommu.Message{Addr: 0xfee00000, Data: 0x41},
		Route:   func(e uint16) error { entry = int(e); return nil },
	})
	if entry < 0 {
		t.Fatal("the console line was not routed")
	}
	if !strings.Contains(con.String(), fmt.Sprintf("remaps interrupts, compatibility format blocked; the console line through entry %d", entry)) {
		t.Errorf("the console does not name the line's entry")
	}
	// What the I/O APIC sends in remappable format (VT-d 5.1.5.1).
	msg := uint64(0xfee00000 | 1<<4 | entry<<5)
	addr, data, ok := h.Machine.VTd.Interrupt(sim.IOAPICSource, msg, 0)
	if !ok || addr != 0xfee00000 || data&0xff != 0x41 {
		t.Errorf("the line's entry delivers %#x %#x %v, want vector 0x41 to APIC 0", addr, data, ok)
	}
	if _, _, ok := h.Machine.VTd.Interrupt(sim.IOAPICSource, 0xfee00000, 0x41); ok {
		t.Error("the line in compatibility format still passes")
	}
	// The namespace lists the entries as the table holds them: the
	// line's, then the NIC's vectors, each for its own requester.
	got, err := sys.Namespace().ReadFile("/dev/iommu/interrupts")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(got), "\n")
	want := fmt.Sprintf("entry %d f0:1f.0 vector 65 apic 0", entry)
	if len(lines) != 1+len(sys.Ports()[0].Vectors) || lines[0] != want {
		t.Errorf("/dev/iommu/interrupts:\n%s\nwant %q first, then the NIC's %d vectors", got, want, len(sys.Ports()[0].Vectors))
	}
	for _, l := range lines[1:] {
		if !strings.Contains(l, simmachine.NICAddr.String()+" vector ") {
			t.Errorf("entry %q is not the NIC's", l)
		}
	}
}

// A line that cannot be moved would go dead under remapping: the unit
// stops remapping, says why, and both the line and the NIC's vectors
// keep working in compatibility format.
func TestRemapStoppedWhenLineFails(t *testing.T) {
	h, sys, con := vectorMachine(t, system.Line{
		Name: "console", IOAPIC: sim.IOAPICID,
		Message: iommu.Message{Addr: 0xfee00000, Data: 0x41},
		Route:   func(uint16) error { return errors.New("no such line") },
	})
	if !strings.Contains(con.String(), "interrupts not remapped: the console line: no such line") {
		t.Errorf("the console does not say why interrupts are not remapped")
	}
	if sys.IOMMU().RemapsInterrupts() || strings.Contains(con.String(), "remapped, entries") {
		t.Error("remapping stayed on")
	}
	if _, _, ok := h.Machine.VTd.Interrupt(sim.IOAPICSource, 0xfee00000, 0x41); !ok {
		t.Error("the line's compatibility-format message is blocked")
	}
	carries(t, h, sys)
}

// ether9.intremap=off leaves remapping off where the platform could
// have it, and says so: the vectors stay in compatibility format and
// arrive.
func TestRemapOffByCmdline(t *testing.T) {
	h, sys, con := vectorMachineWith(t, vectorConfig{cmdline: "ether9.intremap=off"})
	if !strings.Contains(con.String(), "iommu: interrupts not remapped (ether9.intremap=off)") {
		t.Errorf("the console does not say remapping is off")
	}
	if sys.IOMMU().RemapsInterrupts() || strings.Contains(con.String(), "remapped, entries") {
		t.Error("remapped although ether9.intremap=off")
	}
	carries(t, h, sys)
}

// Processors in x2APIC mode: the unit remaps in extended mode, the
// line's entry names its processor by x2APIC id (the model, decoding by
// IRTA.EIME, delivers to APIC 2 as the line's message asked), and the
// NIC's interrupts arrive through their entries. On a unit without
// extended mode nothing is remapped and the console says why.
func TestRemapX2APIC(t *testing.T) {
	line := func(entry *int) system.Line {
		return system.Line{
			Name: "console", IOAPIC: sim.IOAPICID,
			Message: iommu.Message{Addr: 0xfee00000 | 2<<12, Data: 0x41},
			Route:   func(e uint16) error { *entry = int(e); return nil },
		}
	}
	t.Run("extended mode", func(t *testing.T) {
		entry := -1
		h, sys, con := vectorMachineWith(t, vectorConfig{lines: []system.Line{line(&entry)}, x2apic: true, eim: true})
		if entry < 0 || !strings.Contains(con.String(), "compatibility format blocked; the console line through entry 0; extended mode, to x2APIC ids") {
			t.Fatalf("the unit does not say it remaps in extended mode")
		}
		if irta := h.Machine.VTdRegs().Read64(vtd.IRTA); irta&vtd.IRTA_EIME == 0 {
			t.Errorf("IRTA %#x: the unit was not put in extended mode", irta)
		}
		msg := uint64(0xfee00000 | 1<<4 | entry<<5)
		if addr, data, ok := h.Machine.VTd.Interrupt(sim.IOAPICSource, msg, 0); !ok || addr != 0xfee02000 || data&0xff != 0x41 {
			t.Errorf("the line's entry delivers %#x %#x %v, want vector 0x41 to APIC 2", addr, data, ok)
		}
		got, err := sys.Namespace().ReadFile("/dev/iommu/interrupts")
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("entry %d f0:1f.0 vector 65 apic 2\n", entry); !strings.HasPrefix(got, want) {
			t.Errorf("/dev/iommu/interrupts:\n%s\nwant %q first", got, want)
		}
		carries(t, h, sys)
	})
	t.Run("no extended mode", func(t *testing.T) {
		entry := -1
		h, sys, con := vectorMachineWith(t, vectorConfig{lines: []system.Line{line(&entry)}, x2apic: true})
		if !strings.Contains(con.String(), "interrupts not remapped: the processors run in x2APIC mode and the unit has no extended interrupt mode (ECAP.EIM)") {
			t.Errorf("the console does not say why interrupts are not remapped")
		}
		if entry >= 0 {
			t.Error("the console line was moved onto an entry of a unit that does not remap")
		}
		carries(t, h, sys)
	})
}

// leaveQueueOn leaves m's VT-d unit as firmware may hand it over: its
// invalidation queue on, interrupt remapping on through a table of its
// own, compatibility format let through.
func leaveQueueOn(t *testing.T, m *sim.Machine) {
	t.Helper()
	regs := m.VTdRegs()
	for _, reg := range []uint32{vtd.IQA, vtd.IRTA} {
		page, err := m.Mem.Alloc(kernel.PageSize, kernel.PageSize)
		if err != nil {
			t.Fatal(err)
		}
		regs.Write64(reg, uint64(page.Phys))
	}
	regs.Write32(vtd.GCMD, vtd.GCMD_QIE)
	regs.Write32(vtd.GCMD, vtd.GCMD_QIE|vtd.GCMD_SIRTP)
	regs.Write32(vtd.GCMD, vtd.GCMD_QIE|vtd.GCMD_IRE|vtd.GCMD_CFI)
}

// A unit firmware left with its queue and remapping on is taken over on a
// platform that owns its units: the console says so, the unit remaps
// through the system's own table, and the NIC's interrupts arrive.
func TestRemapAfterFirmware(t *testing.T) {
	h, sys, con := vectorMachineWith(t, vectorConfig{firmware: true})
	if !strings.Contains(con.String(), "firmware left interrupt remapping and the invalidation queue on; turned off and started afresh") {
		t.Errorf("the console does not say what firmware left on")
	}
	if !strings.Contains(con.String(), "remaps interrupts, compatibility format blocked") {
		t.Fatalf("the unit does not remap interrupts")
	}
	if _, _, ok := h.Machine.VTd.Interrupt(iommu.SourceID(simmachine.NICAddr.Bus, simmachine.NICAddr.Dev, simmachine.NICAddr.Fn), 0xfee00000, 0x41); ok {
		t.Error("compatibility format still passes, as firmware left it")
	}
	carries(t, h, sys)
}
