//go:build linux

package linux

import (
	"encoding/binary"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// An eventfd as the metal platform's shim signals it: 8-byte counts, an
// event taken before the wait is not lost, one wait consumes everything
// pending, and a wait with nothing pending times out.
func TestEventFileEventfd(t *testing.T) {
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	e := NewEventFile(os.NewFile(uintptr(fd), "eventfd"), 8)
	defer e.Close()
	signal := func() {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], 1)
		if _, err := unix.Write(fd, b[:]); err != nil {
			t.Fatal(err)
		}
	}
	if fired, err := e.Wait(0); fired || err != nil {
		t.Fatalf("Wait(0) with nothing pending: %v, %v", fired, err)
	}
	signal()
	signal()
	if fired, err := e.Wait(0); !fired || err != nil {
		t.Fatalf("Wait(0) with two events pending: %v, %v", fired, err)
	}
	if fired, err := e.Wait(20 * time.Millisecond); fired || err != nil {
		t.Fatalf("a second Wait after both were consumed: %v, %v", fired, err)
	}
	done := make(chan bool)
	go func() {
		fired, err := e.Wait(time.Minute)
		if err != nil {
			t.Error(err)
		}
		done <- fired
	}()
	time.Sleep(10 * time.Millisecond)
	signal()
	select {
	case fired := <-done:
		if !fired {
			t.Fatal("Wait missed the event")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Wait slept through the event")
	}
}
