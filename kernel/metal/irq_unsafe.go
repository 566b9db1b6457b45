//go:build linux

package metal

import (
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// futexWaitPrivate is FUTEX_WAIT (0) | FUTEX_PRIVATE_FLAG (128), from
// Linux's uapi/linux/futex.h.
const futexWaitPrivate = 128

// IRQ is one interrupt vector of the local APIC, for a device's MSI or
// MSI-X message: the shim counts each interrupt on the vector in a word
// of this IRQ and wakes whoever sleeps on it in FUTEX_WAIT. It is a
// kernel.Waiter for one poll loop.
type IRQ struct {
	word   *uint32 // the shim writes it: it must not move (Go's heap does not)
	vector uint8
	apic   uint32
	seen   uint32 // the count the last Wait returned at
}

// NewIRQ takes a free vector from the shim.
func NewIRQ() (*IRQ, error) {
	q := &IRQ{word: new(uint32)}
	r, err := call("irq alloc", callIRQAlloc, uintptr(unsafe.Pointer(q.word)), 0)
	if err != nil {
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

// String names the vector on the console.
func (q *IRQ) String() string { return fmt.Sprintf("MSI on vector %d", q.vector) }

// Count is how many interrupts arrived on the vector.
func (q *IRQ) Count() uint32 { return atomic.LoadUint32(q.word) }

// Wait returns true as soon as an interrupt arrived since the last Wait
// that returned true, or false after timeout without one.
func (q *IRQ) Wait(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		c := atomic.LoadUint32(q.word)
		if c != q.seen {
			q.seen = c
			return true
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		ts := unix.NsecToTimespec(left.Nanoseconds())
		// The shim adds one and wakes between our load and the wait, or
		// the wait finds the word changed (EAGAIN): either way no
		// interrupt is slept through.
		unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(q.word)), futexWaitPrivate,
			uintptr(c), uintptr(unsafe.Pointer(&ts)), 0, 0)
	}
}

// Close gives the vector back; the device must no longer send to it.
func (q *IRQ) Close() error {
	if _, err := call("irq free", callIRQFree, uintptr(q.vector), 0); err != nil {
		return fmt.Errorf("metal: vector %d: %w", q.vector, err)
	}
	return nil
}
