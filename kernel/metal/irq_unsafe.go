//go:build linux

package metal

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ether9/ether9/kernel/linux"
)

// IRQ is one interrupt vector of the local APIC, for a device's MSI or
// MSI-X message. The shim signals an eventfd of this IRQ at each
// interrupt on the vector, so a waiter sleeps in the runtime's network
// poller and its P runs the other goroutines (linux.EventFile says why
// that matters with one CPU), and counts it in a word Count reads. It is
// a kernel.Waiter for one poll loop.
type IRQ struct {
	word   *uint32 // the shim writes it: it must not move (Go's heap does not)
	events *linux.EventFile
	vector uint8
	apic   uint32

	errs    atomic.Uint64
	lastErr atomic.Pointer[error]
}

// NewIRQ takes a free vector from the shim.
func NewIRQ() (*IRQ, error) {
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("metal: irq eventfd: %w", err)
	}
	// Non-blocking, os.NewFile puts it in the poller's epoll set.
	q := &IRQ{word: new(uint32), events: linux.NewEventFile(os.NewFile(uintptr(fd), "irq"), 8)}
	r, err := call("irq alloc", callIRQAlloc, uintptr(unsafe.Pointer(q.word)), uintptr(fd))
	if err != nil {
		q.events.Close()
		return nil, err
	}
	q.vector, q.apic = uint8(r), uint32(uint64(r)>>32)
	return q, nil
}

// MSIAddress and MSIData are the message a device sends to raise this
// IRQ: the LAPIC's address with its destination ID in bits 19:12, the
// vector in the data, fixed delivery, edge-triggered (SDM 11.11.1-2).
func (q *IRQ) MSIAddress() uint64 { return 0xfee00000 | uint64(q.apic&0xff)<<12 }

// MSIData is the MSI data word; see MSIAddress.
func (q *IRQ) MSIData() uint16 { return uint16(q.vector) }

// Vector is the interrupt vector.
func (q *IRQ) Vector() uint8 { return q.vector }

// String names the vector on the console, "MSI on vector 80", and says
// how many waits failed if any did.
func (q *IRQ) String() string {
	if e := q.lastErr.Load(); e != nil {
		return fmt.Sprintf("MSI on vector %d (%d waits failed, the last: %v)", q.vector, q.errs.Load(), *e)
	}
	return fmt.Sprintf("MSI on vector %d", q.vector)
}

// Count is how many interrupts arrived on the vector.
func (q *IRQ) Count() uint32 { return atomic.LoadUint32(q.word) }

// Wait returns true as soon as an interrupt arrived since the last Wait
// that returned true, or false after timeout without one. Should the
// eventfd fail, it sleeps out the timeout, so the loop polls, and the
// error shows in String.
func (q *IRQ) Wait(timeout time.Duration) bool {
	fired, err := q.events.Wait(timeout)
	if err != nil {
		q.errs.Add(1)
		q.lastErr.Store(&err)
		time.Sleep(timeout)
		return false
	}
	return fired
}

// Close gives the vector back; the device must no longer send to it.
func (q *IRQ) Close() error {
	if _, err := call("irq free", callIRQFree, uintptr(q.vector), 0); err != nil {
		return errors.Join(fmt.Errorf("metal: vector %d: %w", q.vector, err), q.events.Close())
	}
	return q.events.Close()
}
