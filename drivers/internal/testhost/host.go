// Package testhost builds the hosts the drivers' tests run on: a simulated
// machine with a NIC model plugged in behind the VT-d model, our VT-d
// driver giving the device its domain, the driver bound through probe,
// and gVisor on top when asked. It holds the checks those tests share:
// statistics by name, nothing pinned or mapped after close, no DMA fault,
// the frames a wire's far end saw, and TCP and UDP transfers between two
// hosts; Suite runs those every driver must pass on each driver's hosts.
// What is particular to a device stays in its driver's tests.
package testhost

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/ether9/ether9/drivers/internal/nictest"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/probe"
	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/iommu"
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/vtd"
	"github.com/ether9/ether9/kernel/sim/wire"
	"github.com/ether9/ether9/netstack"
	"github.com/ether9/ether9/pci"
)

// Options say how a host is put together.
type Options struct {
	// Addr is where the model sits on the bus.
	Addr pci.Addr
	// End is the wire end the model is attached to before the driver
	// binds; nil leaves attaching to plug.
	End *wire.End
	// NonCoherent makes device and CPU views of memory meet only at syncs.
	NonCoherent bool
	// Passthrough leaves the VT-d unit alone: DMA addresses are physical.
	Passthrough bool
	// Polling binds the driver with no interrupt line.
	Polling bool
	// MSIX gives probe the machine's vectors (sim.Machine.MSI), so a
	// driver that asks for MSI-X vectors gets them.
	MSIX bool
	// Logf receives the driver's log; nil leaves probe's default.
	Logf func(format string, args ...any)
}

// Model is a NIC model: it sits on a wire.
type Model interface {
	Attach(p wire.Port)
}

// Host is one simulated machine with its NIC bound.
type Host[M Model] struct {
	Node
	Model M
}

// Node is a host as the checks see it, whatever its model.
type Node struct {
	Machine *sim.Machine
	Unit    *iommu.Unit // nil with Options.Passthrough
	NIC     nic.NIC
	Stack   *netstack.Stack // set by Up

	Addr    pci.Addr      // where the model sits
	Vectors []*sim.Vector // the MSI-X vectors probe enabled (Options.MSIX)

	cpuSyncs    uint64 // the memory's syncs for the CPU when the driver had bound
	nonCoherent bool   // what Options asked for, checked by Finish
}

// New builds a machine, lets plug put the model at o.Addr, attaches it to
// o.End, and binds the driver through probe. Exactly one NIC must come up.
// A machine asked to be non-coherent must be. Coherent or not, the memory
// tracks who owns each streaming buffer, and the test fails at its end if
// the memory saw a DMA API misuse (CheckNoMisuse).
func New[M Model](t testing.TB, o Options, plug func(m *sim.Machine, a pci.Addr) (M, error)) *Host[M] {
	t.Helper()
	m := sim.NewMachine(sim.Config{VTd: vtd.QEMU(), NonCoherentDMA: o.NonCoherent, CheckOwnership: true})
	if err := m.Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { CheckNoMisuse(t, m.Mem) })
	if o.NonCoherent {
		probeNonCoherent(t, m.Mem)
	}
	model, err := plug(m, o.Addr)
	if err != nil {
		t.Fatalf("plug the model at %v: %v", o.Addr, err)
	}
	if o.End != nil {
		model.Attach(o.End)
	}
	h := &Host[M]{Node: Node{Machine: m, Addr: o.Addr, nonCoherent: o.NonCoherent}, Model: model}
	if !o.Passthrough {
		if h.Unit, err = iommu.New(m.VTdRegs(), m.Mem, iommu.Options{Clock: m.Clock}); err != nil {
			t.Fatal(err)
		}
	}
	p := probe.Platform{
		Config: m.Bus,
		BAR:    func(f *pci.Function, bar int) (kernel.Regs, error) { return m.Bus.Regs(f.Addr, bar) },
		IOMMU:  h.Unit,
		Memory: m.Mem,
		Clock:  m.Clock,
		Logf:   o.Logf,
	}
	if !o.Polling {
		p.IRQ = func(f *pci.Function) kernel.Waiter { return m.IRQ(f.Addr) }
	}
	if o.MSIX {
		p.MSI = m.MSI
	}
	res, err := probe.Bind(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
	nics := res.NICs()
	if len(nics) != 1 {
		t.Fatalf("probe found %d NICs, want 1", len(nics))
	}
	h.NIC = nics[0]
	for _, v := range res.Bound[0].Vectors {
		h.Vectors = append(h.Vectors, v.(*sim.Vector))
	}
	h.cpuSyncs = m.Mem.Stats().SyncsForCPU
	return h
}

// Up puts a gVisor stack on the NIC with addr.
func (h *Node) Up(t testing.TB, addr netip.Prefix, ep netstack.Options) {
	t.Helper()
	s, err := netstack.NewStack(netstack.StackOptions{}, netstack.Interface{NIC: h.NIC, Addrs: []netip.Prefix{addr}, Endpoint: ep})
	if err != nil {
		h.NIC.Close()
		t.Fatal(err)
	}
	h.Stack = s
}

// Close takes the stack down (which closes the NIC), or the NIC when no
// stack runs on it.
func (h *Node) Close(t testing.TB) {
	t.Helper()
	if h.Stack == nil {
		if err := h.NIC.Close(); err != nil {
			t.Error(err)
		}
		return
	}
	for _, ep := range h.Stack.Endpoints {
		ep.Attach(nil) // stop the poll loops before RemoveNIC takes the stack lock
	}
	h.Stack.Close()
}

// Finish closes the host and checks what every test checks at its end:
// no DMA fault, nothing pinned or mapped, and a host asked to be
// non-coherent ran so, its syncs used (CheckNonCoherent).
func (h *Node) Finish(t testing.TB) {
	t.Helper()
	h.Close(t)
	h.CheckNoFaults(t)
	h.CheckNoLeaks(t)
	if h.nonCoherent {
		h.CheckNonCoherent(t)
	}
}

// Stat is the NIC's statistic called name.
func (h *Node) Stat(t testing.TB, name string) uint64 {
	t.Helper()
	return nictest.Stat(t, h.NIC.Stats(), name)
}

// IOMMUStats are the VT-d driver's counters, zero with translation off.
func (h *Node) IOMMUStats() iommu.Stats {
	if h.Unit == nil {
		return iommu.Stats{}
	}
	return h.Unit.Stats()
}

// CheckNoLeaks checks, after the NIC closed, that every pin was undone,
// memory saw no misuse, and every IOMMU mapping went with its IOVA.
func (h *Node) CheckNoLeaks(t testing.TB) {
	t.Helper()
	if ms := h.Machine.Mem.Stats(); ms.Pins != ms.Unpins || ms.Misuses != 0 {
		t.Errorf("after close: %d pins, %d unpins, %d misuses %v", ms.Pins, ms.Unpins, ms.Misuses, h.Machine.Mem.Errors())
	}
	if h.Unit == nil {
		return
	}
	if st := h.Unit.Stats(); st.Maps != st.Unmaps || st.IOVAInUse != 0 {
		t.Errorf("iommu after close: %d maps, %d unmaps, %d IOVA bytes in use", st.Maps, st.Unmaps, st.IOVAInUse)
	}
}

// CheckNoMisuse fails the test if mem saw a DMA API misuse: a sync or a
// flush of memory not registered, or a device write to bytes synced for
// the CPU and not handed back with SyncForDevice.
func CheckNoMisuse(t testing.TB, mem *sim.Memory) {
	t.Helper()
	if n := mem.Stats().Misuses; n != 0 {
		t.Errorf("%d DMA API misuses: %v", n, mem.Errors())
	}
}

// CheckNoFaults checks that the VT-d unit recorded no fault; with
// translation off there is nothing to record.
func (h *Node) CheckNoFaults(t testing.TB) {
	t.Helper()
	if h.Unit == nil {
		return
	}
	if f := h.Unit.Faults(); len(f) != 0 {
		t.Errorf("%d VT-d faults, first %v", len(f), f[0])
	}
	if n := h.Unit.Stats().Faults; n != 0 {
		t.Errorf("iommu counted %d faults", n)
	}
}

// CheckQueuesSpread checks that received frames came in on more than one
// queue, and that every queue that received was woken by its interrupt.
func CheckQueuesSpread(t testing.TB, n nic.NIC) {
	t.Helper()
	stats := n.Stats()
	busy := 0
	for q := range n.Queues() {
		frames := nictest.Stat(t, stats, fmt.Sprintf("q%d_rx_frames", q))
		if frames == 0 {
			continue
		}
		busy++
		if wakes := nictest.Stat(t, stats, fmt.Sprintf("q%d_irq_wake", q)); wakes == 0 {
			t.Errorf("%s queue %d: %d frames and no interrupt wake-up (%d timeouts)", n.Name(), q, frames, nictest.Stat(t, stats, fmt.Sprintf("q%d_irq_timeout", q)))
		}
	}
	if busy < 2 {
		t.Errorf("%s: frames arrived on %d queue(s), want RSS to use several", n.Name(), busy)
	}
}

// Wire is a new wire, the test failing if o is refused.
func Wire(t testing.TB, o wire.Options) *wire.Wire {
	t.Helper()
	w, err := wire.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return w
}
