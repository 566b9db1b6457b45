// Package nictest holds the checks every driver's unit tests share: a
// statistic by name, a close that leaves no DMA mapping behind, a ctl
// fuzzed from common seeds, received packets that keep their bytes while
// the stack holds them and the ring keeps receiving, and the GSO packets
// a stack hands a driver with the checks of the segments that reach the
// wire, whether the device or the driver cut them.
package nictest

import (
	"testing"

	"github.com/ether9/ether9/drivers/internal/fakedev"
	"github.com/ether9/ether9/drivers/nic"
)

// Unit is a NIC under test and the DMA it runs on.
type Unit struct {
	NIC nic.NIC
	DMA *fakedev.DMA // nil when the NIC runs on other DMA
}

// Stat is the NIC's statistic called name.
func (u Unit) Stat(t testing.TB, name string) uint64 {
	t.Helper()
	return Stat(t, u.NIC.Stats(), name)
}

// Close closes the NIC and checks that no streaming mapping outlives it.
func (u Unit) Close(t testing.TB) {
	t.Helper()
	if err := u.NIC.Close(); err != nil {
		t.Fatal(err)
	}
	if u.DMA == nil {
		return
	}
	if n := u.DMA.Live(); n != 0 {
		t.Fatalf("%d DMA mappings left after close", n)
	}
}

// Stat finds the statistic called name.
func Stat(t testing.TB, stats []nic.Stat, name string) uint64 {
	t.Helper()
	for _, s := range stats {
		if s.Name == name {
			return s.Value
		}
	}
	t.Fatalf("no stat %q", name)
	return 0
}

// Receive has q take up to budget descriptors into a batch of its own and
// hands each frame received to got, in order; it returns the descriptors
// taken. Tests that look at frames one by one use it in place of a loop
// over the batch; the packets stay valid after it returns.
func Receive(q nic.Queue, budget int, got func(*nic.RxPacket)) int {
	var b Batch
	return b.Receive(q, budget, got)
}

// Batch is a receive batch used again from poll to poll, for benchmarks
// that must not allocate per poll. The packets handed to got are valid
// until the next Receive.
type Batch []nic.RxPacket

// Receive is Receive into b.
func (b *Batch) Receive(q nic.Queue, budget int, got func(*nic.RxPacket)) int {
	if len(*b) < budget {
		*b = make([]nic.RxPacket, budget)
	}
	pkts := (*b)[:budget]
	n, taken := q.Receive(pkts)
	for i := range pkts[:n] {
		got(&pkts[i])
	}
	return taken
}
