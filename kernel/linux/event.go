//go:build linux

package linux

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// EventFile is a file whose read returns and clears a count of events:
// a uio device (/dev/uioN, a 4-byte interrupt count) or an eventfd (8
// bytes), which is how the metal platform's shim signals a vector.
//
// Its Wait sleeps in the runtime's network poller (the file is
// non-blocking and in its epoll set), not in a blocking system call: a
// goroutine in a system call keeps its P until sysmon takes it back,
// which takes up to two sysmon ticks of 10 ms each once the runtime has
// been quiet. With one CPU (GOMAXPROCS 1) every other goroutine, another
// queue's spinning poll loop and the stack's senders included, then
// stood still for that long each time a loop went to sleep: igb's queue
// loops did so about 250 times per 16 MiB pulled, for half polling's
// throughput. A file the poller does not take sleeps in ppoll(2).
type EventFile struct {
	f     *os.File
	count int // bytes a read returns: 4 for uio, 8 for an eventfd
}

// NewEventFile waits on f, whose reads return count bytes.
func NewEventFile(f *os.File, count int) *EventFile { return &EventFile{f: f, count: count} }

// Wait sleeps until an event is pending or timeout passes, and consumes
// what is pending. It reports whether there was an event; an error means
// the file could not be polled or read.
func (e *EventFile) Wait(timeout time.Duration) (bool, error) {
	rc, err := e.f.SyscallConn()
	if err != nil {
		return false, fmt.Errorf("event file: %w", err)
	}
	var buf [8]byte
	var rerr error
	read := func(fd uintptr) bool {
		_, rerr = unix.Read(int(fd), buf[:e.count])
		return !errors.Is(rerr, unix.EAGAIN)
	}
	if timeout <= 0 {
		// The poller reports an expired deadline before it reads:
		// look once.
		if err := rc.Control(func(fd uintptr) { read(fd) }); err != nil {
			return false, fmt.Errorf("event file: %w", err)
		}
		if errors.Is(rerr, unix.EAGAIN) {
			return false, nil
		}
		return rerr == nil, wrapRead(rerr)
	}
	switch err := e.f.SetReadDeadline(time.Now().Add(timeout)); {
	case errors.Is(err, os.ErrNoDeadline):
		return e.ppoll(rc, timeout)
	case err != nil:
		return false, fmt.Errorf("event file deadline: %w", err)
	}
	switch err := rc.Read(read); {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("event file: %w", err)
	}
	return rerr == nil, wrapRead(rerr)
}

// ppoll is Wait for a file the poller does not take.
func (e *EventFile) ppoll(rc syscall.RawConn, timeout time.Duration) (bool, error) {
	var fired bool
	var perr error
	cerr := rc.Control(func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		ts := unix.NsecToTimespec(timeout.Nanoseconds())
		n, err := unix.Ppoll(fds, &ts, nil)
		switch {
		case errors.Is(err, unix.EINTR), n == 0 && err == nil:
			return // the caller polls again
		case err != nil:
			perr = fmt.Errorf("poll: %w", err)
			return
		case fds[0].Revents&unix.POLLIN == 0:
			perr = fmt.Errorf("poll: revents %#x", fds[0].Revents)
			return
		}
		var buf [8]byte
		if _, err := unix.Read(int(fd), buf[:e.count]); err != nil && !errors.Is(err, unix.EAGAIN) {
			perr = wrapRead(err)
			return
		}
		fired = true
	})
	return fired, errors.Join(cerr, perr)
}

func wrapRead(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("read event count: %w", err)
}

// Close closes the file.
func (e *EventFile) Close() error { return e.f.Close() }
