//go:build linux

package linux

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// SetWallClock sets the kernel's real-time clock (CLOCK_REALTIME) to t;
// monotonic clocks are not moved.
func SetWallClock(t time.Time) error {
	ts := unix.NsecToTimespec(t.UnixNano())
	if err := unix.ClockSettime(unix.CLOCK_REALTIME, &ts); err != nil {
		return fmt.Errorf("linux: set the wall clock: %w", err)
	}
	return nil
}
