package testhost

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ether9/ether9/drivers/xsk"
	"github.com/ether9/ether9/kernel/sim/wire"
	"github.com/ether9/ether9/pci"
)

// MSIXRig is what the MSI-X checks need: a host whose driver was given
// the machine's vectors (Options.MSIX), the wire its model is on, and a
// way to land one frame on queue q.
type MSIXRig struct {
	Node *Node
	Wire *wire.Wire
	Send func(q int)
}

// counters says what the vectors, the table and the driver counted, for
// failures.
func (r MSIXRig) counters() string {
	var b strings.Builder
	for i, v := range r.Node.Vectors {
		w, to := v.Counts()
		fmt.Fprintf(&b, "vector %d (%d): raised %d wakes %d timeouts %d; ", i, v.Vector(), v.Raised(), w, to)
	}
	fmt.Fprintf(&b, "stray messages %d; driver:", r.Node.Machine.StrayMessages())
	for _, st := range r.Node.NIC.Stats() {
		if strings.HasPrefix(st.Name, "irq_") || strings.Contains(st.Name, "_irq_") || st.Name == "link_changes" {
			fmt.Fprintf(&b, " %s %d", st.Name, st.Value)
		}
	}
	return b.String()
}

// take polls the frames of queue q its wake-up was for. A model that
// defers receive DMA (DeferRx) writes a frame when its queue next
// touches the device; a wake-up on a vector touches nothing (the vector
// masked itself as it fired), so the frame lands as the queue unmasks it
// for the next sleep, which then ends at once.
func (r MSIXRig) take(t *testing.T, q int) int {
	t.Helper()
	irq := IRQRig{Machine: r.Node.Machine, Addr: r.Node.Addr, NIC: r.Node.NIC}
	if n := irq.drain(q); n > 0 {
		return n
	}
	irq.expect(t, irq.sleep(q, irqSleep), true, fmt.Sprintf("queue %d: a held frame, as the queue unmasks its vector (%s)", q, r.counters()))
	return irq.drain(q)
}

// msix reads the function's MSI-X capability.
func (r MSIXRig) msix(t testing.TB) pci.MSIX {
	t.Helper()
	m := r.Node.Machine
	x, ok, err := pci.FindMSIX(m.Bus, r.Node.Addr)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Fatal("no MSI-X capability")
	}
	return x
}

// CheckMSIX checks a driver's MSI-X path on the simulated machine:
//
//   - probe enabled one vector a queue pair and one more, MSI-X on with
//     Function Mask clear and INTx disabled;
//   - an idle queue's sleeps all time out, no vector fires;
//   - with every queue asleep, each frame fires its own queue's vector
//     and wakes that queue and no other (the IVAR routing);
//   - a frame that landed after the queue's last empty poll, before it
//     slept, ends the sleep at once (no lost edge at the unmask);
//   - a table entry masked holds its queue's interrupt in the pending
//     bit array, and unmasked, sends it;
//   - a link change arrives on the last vector, the other causes'.
func CheckMSIX(t *testing.T, r MSIXRig) {
	n := r.Node
	queues := len(n.NIC.Queues())
	b, ok := n.NIC.(xsk.Binder)
	if !ok {
		t.Fatalf("%T steers no frames", n.NIC)
	}
	for q := range queues {
		if _, err := b.Steer(xsk.Filter{UDPPort: uint16(9000 + q)}, q); err != nil {
			t.Fatal(err)
		}
	}
	irq := IRQRig{Machine: n.Machine, Addr: n.Addr, NIC: n.NIC}
	if len(n.Vectors) != queues+1 {
		t.Fatalf("%d vectors for %d queues, want %d", len(n.Vectors), queues, queues+1)
	}
	if v := n.Stat(t, "irq_vectors"); v != uint64(queues+1) {
		t.Errorf("irq_vectors %d, want %d", v, queues+1)
	}
	x := r.msix(t)
	if !x.Enabled || x.FunctionMask {
		t.Errorf("MSI-X capability %+v: want enabled, function unmasked", x)
	}
	if cmd, _ := n.Machine.Bus.ReadConfig(n.Addr, pci.RegCommand, 2); cmd&pci.CmdINTxDisable == 0 {
		t.Errorf("command %#x: INTx not disabled", cmd)
	}
	for q := range queues {
		irq.drain(q)
	}

	// Idle.
	raised := make([]uint64, len(n.Vectors))
	for i, v := range n.Vectors {
		raised[i] = v.Raised()
	}
	for i := range 4 * queues {
		if n.NIC.Queues()[i%queues].Wait(10 * time.Millisecond) {
			t.Fatalf("idle sleep %d woken (%s)", i, r.counters())
		}
	}
	for i, v := range n.Vectors {
		if v.Raised() != raised[i] {
			t.Errorf("vector %d fired while idle (%s)", i, r.counters())
		}
	}

	// Every queue asleep: each frame fires its own vector, wakes its own
	// queue.
	sleeps := make([]<-chan bool, queues)
	for q := range queues {
		sleeps[q] = irq.sleep(q, irqSleep)
	}
	time.Sleep(10 * time.Millisecond)
	for q := range queues {
		before := n.Vectors[q].Raised()
		r.Send(q)
		irq.expect(t, sleeps[q], true, fmt.Sprintf("queue %d's frame (%s)", q, r.counters()))
		if n.Vectors[q].Raised() == before {
			t.Errorf("queue %d woke, its vector did not fire (%s)", q, r.counters())
		}
		time.Sleep(10 * time.Millisecond) // a wrong wake-up would show by now
		for o := q + 1; o < queues; o++ {
			select {
			case <-sleeps[o]:
				t.Fatalf("queue %d's frame woke queue %d too (%s)", q, o, r.counters())
			default:
			}
		}
		if got := r.take(t, q); got != 1 {
			t.Errorf("queue %d polled %d frames, want 1", q, got)
		}
	}

	// No lost edge: the frame lands between the last empty poll and the
	// sleep.
	last := queues - 1
	r.Send(last)
	time.Sleep(10 * time.Millisecond)
	irq.expect(t, irq.sleep(last, irqSleep), true, "a frame that landed before the sleep ("+r.counters()+")")
	if got := r.take(t, last); got != 1 {
		t.Errorf("queue %d polled %d frames, want 1", last, got)
	}

	r.checkMasked(t, x)
	r.checkLink(t)
	for q := range queues {
		if n.Stat(t, fmt.Sprintf("q%d_irq_wake", q)) == 0 {
			t.Errorf("queue %d: no wake-up counted (%s)", q, r.counters())
		}
	}
}

// checkMasked masks queue 0's table entry: its frame's interrupt waits in
// the pending bit array, and goes out when the entry is unmasked.
func (r MSIXRig) checkMasked(t *testing.T, x pci.MSIX) {
	n := r.Node
	irq := IRQRig{Machine: n.Machine, Addr: n.Addr, NIC: n.NIC}
	table, err := n.Machine.Bus.Regs(n.Addr, x.TableBIR)
	if err != nil {
		t.Fatal(err)
	}
	pba, err := n.Machine.Bus.Regs(n.Addr, x.PBABIR)
	if err != nil {
		t.Fatal(err)
	}
	ctl := x.TableOffset + 12 // entry 0's vector control
	table.Write32(ctl, table.Read32(ctl)|1)
	r.Send(0)
	if n.NIC.Queues()[0].Wait(50 * time.Millisecond) {
		t.Fatalf("a masked table entry woke its queue (%s)", r.counters())
	}
	if p := pba.Read32(x.PBAOffset); p&1 == 0 {
		t.Errorf("entry masked, frame landed: PBA %#x, want bit 0 (%s)", p, r.counters())
	}
	table.Write32(ctl, table.Read32(ctl)&^1)
	if p := pba.Read32(x.PBAOffset); p&1 != 0 {
		t.Errorf("entry unmasked: PBA %#x still pending", p)
	}
	irq.expect(t, irq.sleep(0, irqSleep), true, "unmasked with its interrupt pending ("+r.counters()+")")
	if got := r.take(t, 0); got != 1 {
		t.Errorf("polled %d frames after the unmask, want 1", got)
	}
}

// checkLink takes the link down and up again: each change fires the
// other causes' vector, and the driver reads the link.
func (r MSIXRig) checkLink(t *testing.T) {
	n := r.Node
	other := n.Vectors[len(n.Vectors)-1]
	for _, up := range []bool{false, true} {
		fired, seen := other.Raised(), n.Stat(t, "irq_other")
		if err := r.Wire.SetLink(up, 1000); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(irqDeadline)
		for other.Raised() == fired || n.Stat(t, "irq_other") == seen {
			if time.Now().After(deadline) {
				t.Fatalf("link up %v: the other vector did not fire and wake its loop (%s)", up, r.counters())
			}
			time.Sleep(time.Millisecond)
		}
		if l := n.NIC.Link(); l.Up != up {
			t.Errorf("link up %v: the driver reads %v", up, l)
		}
	}
}
