package sim

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/ether9/ether9/pci"
)

// maxRealWait bounds how long Wait blocks in real time before it lets
// virtual time run out: long enough for a model goroutine to catch up,
// short enough to keep tests fast.
const maxRealWait = time.Millisecond

// IRQ is a device's interrupt as its driver sees it. It carries two kinds
// of signal:
//
//   - Raise: an edge (an MSI or MSI-X message, the VT-d fault event, or a
//     model's note that DMA it is about to do will interrupt). Raises
//     while nobody waits collapse into one pending edge.
//   - SetLevel: the function's INTx line, level-triggered as on PCI. The
//     function's config space shows the level in the status register's
//     Interrupt Status bit (3) and the command register's Interrupt
//     Disable bit (10) keeps it from the CPU while set.
//
// A function's IRQ (Machine.IRQ) waits the way Linux's uio_pci_generic
// hands INTx to user space: when the line is taken Wait sets Interrupt
// Disable, as the kernel's handler does, and the next Wait clears it
// again, as the owner does through config space, before it sleeps. So
// the line stays masked while the driver polls, and a level still
// asserted when it is unmasked is taken at once: INTx loses no cause. An
// edge counts only while Interrupt Disable is clear; it stays pending
// while the bit is set.
type IRQ struct {
	clock *Clock
	bus   *Bus     // nil for a line of no function (VT-d)
	addr  pci.Addr // the function whose config space gates the line

	ch     chan struct{} // one pending edge
	notify chan struct{} // the level rose
	level  atomic.Bool
	raised atomic.Uint64

	realWait atomic.Int64 // SetRealWait; 0 is maxRealWait

	message func(addr uint64, data uint32) // to the machine's Message through VT-d; nil for a line of no function

	mu       sync.Mutex // one Wait at a time
	masked   bool       // Wait set Interrupt Disable when it took the line
	wakes    atomic.Uint64
	timeouts atomic.Uint64
}

// NewIRQ returns a line of no function whose timeouts run on clock.
func NewIRQ(clock *Clock) *IRQ {
	return &IRQ{clock: clock, ch: make(chan struct{}, 1), notify: make(chan struct{}, 1)}
}

func newFuncIRQ(clock *Clock, bus *Bus, a pci.Addr) *IRQ {
	q := NewIRQ(clock)
	q.bus, q.addr = bus, a
	return q
}

// SetRealWait sets how long a Wait blocks in real time before it lets
// virtual time run out (1 ms by default), for tests whose sleepers must
// stay asleep until the interrupt they wait for comes.
func (q *IRQ) SetRealWait(d time.Duration) { q.realWait.Store(int64(d)) }

// Raise signals an edge.
func (q *IRQ) Raise() {
	q.raised.Add(1)
	q.pend()
}

// Message is the function's interrupt message (MSI-X): data written to
// addr, which the VT-d unit covering the function remaps (or blocks) and
// the machine's local APIC turns into a vector's interrupt
// (Machine.Message). A line of no function drops it.
func (q *IRQ) Message(addr uint64, data uint32) {
	if q.message != nil {
		q.message(addr, data)
	}
}

// SetLevel drives the INTx line: asserted while the device has an enabled
// cause pending. Models call it whenever that may have changed; a rise
// counts in Raised.
func (q *IRQ) SetLevel(asserted bool) {
	if q.level.Swap(asserted) == asserted {
		return
	}
	q.setStatus(asserted)
	if !asserted {
		return
	}
	q.raised.Add(1)
	select {
	case q.notify <- struct{}{}:
	default:
	}
}

// Level reports whether the device asserts INTx, whether or not Interrupt
// Disable keeps it from the CPU.
func (q *IRQ) Level() bool { return q.level.Load() }

// Raised returns how many edges were raised and how many times the INTx
// level rose.
func (q *IRQ) Raised() uint64 { return q.raised.Load() }

// String names the line on the console, as the Linux platform's names
// its uio interrupt: "sim INTx 00:03.0", or "sim line" for one of no
// function.
func (q *IRQ) String() string {
	if q.bus == nil {
		return "sim line"
	}
	return "sim INTx " + q.addr.String()
}

// Counts returns how many Waits the line ended and how many timed out.
func (q *IRQ) Counts() (wakes, timeouts uint64) { return q.wakes.Load(), q.timeouts.Load() }

// Wait unmasks the line if the last Wait masked it, then returns true at
// once if the line is asserted (or an edge pending) and not disabled, else
// waits up to timeout of virtual time for that. Taking the line masks it.
// It is a kernel.Waiter.
func (q *IRQ) Wait(timeout time.Duration) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.masked {
		q.setDisable(false)
		q.masked = false
	}
	if q.take() {
		return true
	}
	if timeout <= 0 {
		q.timeouts.Add(1)
		return false
	}
	real := time.Duration(q.realWait.Load())
	if real == 0 {
		real = maxRealWait
	}
	t := time.NewTimer(min(timeout, real))
	defer t.Stop()
	for {
		select {
		case <-q.ch:
			if !q.disabled() {
				q.taken()
				return true
			}
			// Nothing gets through a disabled line: the edge stays
			// pending and the timeout runs out.
			q.pend()
			<-t.C
		case <-q.notify:
			if q.take() {
				return true
			}
			continue
		case <-t.C:
			if q.take() {
				return true
			}
		}
		q.clock.Advance(timeout)
		q.timeouts.Add(1)
		return false
	}
}

func (q *IRQ) pend() {
	select {
	case q.ch <- struct{}{}:
	default:
	}
}

// take takes the line if it is deliverable: the level asserted or an edge
// pending, and Interrupt Disable clear. A function's line is masked as it
// is taken.
func (q *IRQ) take() bool {
	if q.disabled() {
		return false
	}
	got := q.level.Load()
	if !got {
		select {
		case <-q.ch:
			got = true
		default:
		}
	}
	if got {
		q.taken()
	}
	return got
}

// taken masks a function's line as uio_pci_generic's handler does and
// counts the wake.
func (q *IRQ) taken() {
	if q.bus != nil {
		q.setDisable(true)
		q.masked = true
	}
	q.wakes.Add(1)
}

// config returns the function's config space, nil for a line of no
// function or one not (yet) on the bus.
func (q *IRQ) config() *ConfigSpace {
	if q.bus == nil {
		return nil
	}
	if s := q.bus.slot(q.addr); s != nil {
		return s.cfg
	}
	return nil
}

func (q *IRQ) disabled() bool {
	c := q.config()
	return c != nil && c.Command()&cmdIntxOff != 0
}

// setDisable sets or clears Interrupt Disable through the bus, as a
// config write by software.
func (q *IRQ) setDisable(on bool) {
	c := q.config()
	if c == nil {
		return
	}
	cmd := c.Command() &^ cmdIntxOff
	if on {
		cmd |= cmdIntxOff
	}
	_ = q.bus.WriteConfig(q.addr, cfgCommand, 2, uint32(cmd))
}

func (q *IRQ) setStatus(on bool) {
	if c := q.config(); c != nil {
		c.setIntStatus(on)
	}
}
