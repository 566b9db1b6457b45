package sim

import (
	"testing"
	"time"

	"github.com/ether9/ether9/kernel/sim/vtd"
	"github.com/ether9/ether9/pci"
)

// A function's INTx behaves as uio_pci_generic hands it over: level-
// triggered, shown in Interrupt Status, kept from the CPU by Interrupt
// Disable, which the Wait that takes the line sets and the next Wait
// clears; a level still asserted when the line is unmasked is taken at
// once, and one that drops while masked is not.
func TestINTxLikeUIO(t *testing.T) {
	m := NewMachine(Config{VTd: vtd.QEMU()})
	a := pci.Addr{Dev: 2}
	if err := m.Bus.Add(a, cfgOnly{NewConfigSpace(0x8086, 0x10c9, 0x020000, 0)}); err != nil {
		t.Fatal(err)
	}
	q := m.IRQ(a)
	status := func() uint32 { v, _ := m.Bus.ReadConfig(a, cfgStatus, 2); return v }
	command := func() uint32 { v, _ := m.Bus.ReadConfig(a, cfgCommand, 2); return v }

	if q.Wait(time.Millisecond) {
		t.Fatal("woken with the line low")
	}
	q.SetLevel(true)
	if status()&statusIntx == 0 {
		t.Errorf("status %#x with INTx asserted: no Interrupt Status", status())
	}
	if !q.Wait(time.Hour) {
		t.Fatal("an asserted line did not end the sleep")
	}
	if command()&cmdIntxOff == 0 {
		t.Fatalf("command %#x: taking the line did not mask it", command())
	}
	// Still asserted: the next Wait unmasks and takes it at once.
	if !q.Wait(time.Millisecond) {
		t.Fatal("a level still asserted at the unmask was lost")
	}
	// Dropped while masked: nothing is taken.
	q.SetLevel(false)
	if status()&statusIntx != 0 {
		t.Errorf("status %#x with INTx low", status())
	}
	if q.Wait(time.Millisecond) {
		t.Fatal("woken by a level that dropped while masked")
	}
	if command()&cmdIntxOff != 0 {
		t.Fatalf("command %#x: the Wait did not unmask", command())
	}
	// Masked by someone else: an asserted line never wakes, an edge
	// stays pending.
	if err := m.Bus.WriteConfig(a, cfgCommand, 2, command()|cmdIntxOff); err != nil {
		t.Fatal(err)
	}
	q.SetLevel(true)
	q.Raise()
	if q.Wait(time.Millisecond) {
		t.Fatal("a line with Interrupt Disable set woke")
	}
	if err := m.Bus.WriteConfig(a, cfgCommand, 2, command()&^cmdIntxOff); err != nil {
		t.Fatal(err)
	}
	q.SetLevel(false)
	if !q.Wait(time.Millisecond) {
		t.Fatal("an edge raised while masked was lost")
	}
	if w, to := q.Counts(); w != 3 || to != 3 {
		t.Errorf("wakes %d timeouts %d, want 3 and 3", w, to)
	}
}

// A level that rises while a Wait sleeps ends it.
func TestINTxRiseWakesSleeper(t *testing.T) {
	m := NewMachine(Config{VTd: vtd.QEMU()})
	a := pci.Addr{Dev: 2}
	if err := m.Bus.Add(a, cfgOnly{NewConfigSpace(0x8086, 0x10c9, 0x020000, 0)}); err != nil {
		t.Fatal(err)
	}
	q := m.IRQ(a)
	q.SetRealWait(time.Minute)
	done := make(chan bool, 1)
	go func() { done <- q.Wait(time.Minute) }()
	time.Sleep(time.Millisecond)
	q.SetLevel(true)
	select {
	case ok := <-done:
		if !ok {
			t.Fatal("the sleep timed out")
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("a rising level did not end the sleep (level %v raised %d)", q.Level(), q.Raised())
	}
}

// A function's line names itself on the console as the Linux platform's
// uio interrupt does, with the function it belongs to.
func TestIRQString(t *testing.T) {
	m := NewMachine(Config{VTd: vtd.QEMU()})
	if got, want := m.IRQ(pci.Addr{Dev: 3}).String(), "sim INTx 00:03.0"; got != want {
		t.Errorf("function's line %q, want %q", got, want)
	}
	if got, want := NewIRQ(m.Clock).String(), "sim line"; got != want {
		t.Errorf("line of no function %q, want %q", got, want)
	}
}
