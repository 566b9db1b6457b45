//go:build linux

package metal

import (
	"fmt"
	"runtime"
	"time"
	"unsafe"
)

const callStats = 0x4d07

// Stats are the shim's counters since boot (struct stats in
// kernel/metal/shim/shim.h, field for field): what a test reads to see
// that the machine sleeps when it has nothing to do.
type Stats struct {
	Syscalls     uint64 // system calls made
	ClockGettime uint64 // of them clock_gettime (the vDSO makes none)
	TimerIRQs    uint64 // LAPIC timer interrupts
	DeviceIRQs   uint64 // device interrupts (MSI) counted
	PageFaults   uint64 // page faults, demand paging included
	Switches     uint64 // thread switches
	IdleNanos    uint64 // time the CPU halted with nothing to run
	TimerWrites  uint64 // LAPIC timer (re)armed or stopped
}

// Idle is IdleNanos as a duration.
func (s Stats) Idle() time.Duration { return time.Duration(s.IdleNanos) }

// Text renders the counters one per line, a name and a value, as the
// namespace's other state files do.
func (s Stats) Text() string {
	return fmt.Sprintf("syscalls %d\nclock_gettime %d\ntimer_irqs %d\ndevice_irqs %d\npage_faults %d\nswitches %d\nidle_ns %d\ntimer_writes %d\n",
		s.Syscalls, s.ClockGettime, s.TimerIRQs, s.DeviceIRQs, s.PageFaults, s.Switches, s.IdleNanos, s.TimerWrites)
}

// ShimStats reads the shim's counters.
func ShimStats() (Stats, error) {
	// On the heap, which does not move: the shim writes through the
	// address after call has taken it as a number.
	s := new(Stats)
	_, err := call("stats", callStats, uintptr(unsafe.Pointer(s)), unsafe.Sizeof(*s))
	runtime.KeepAlive(s)
	return *s, err
}
