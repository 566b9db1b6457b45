//go:build linux

package linux

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ether9/ether9/internal/sched"
)

// uioRig is a UIO on a pipe that stands for /dev/uioN and a file that
// stands for the function's config space.
type uioRig struct {
	u      *UIO
	fire   *os.File // the pipe's write end: one write is one interrupt
	config *os.File
}

func newUIORig(t *testing.T, command uint16) *uioRig {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := os.Create(filepath.Join(t.TempDir(), "config"))
	if err != nil {
		t.Fatal(err)
	}
	space := make([]byte, 256)
	binary.LittleEndian.PutUint16(space[cfgCommand:], command)
	if _, err := cfg.Write(space); err != nil {
		t.Fatal(err)
	}
	u := newUIO(r, cfg)
	t.Cleanup(func() { u.Close(); w.Close() })
	return &uioRig{u: u, fire: w, config: cfg}
}

// interrupt does what Linux's handler does: it masks the line in the
// command register and counts an event.
func (r *uioRig) interrupt(t *testing.T, n uint32) {
	t.Helper()
	cmd := r.command(t) | cmdINTxDisable
	var b [4]byte
	binary.LittleEndian.PutUint16(b[:2], cmd)
	if _, err := r.config.WriteAt(b[:2], cfgCommand); err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint32(b[:], n)
	if _, err := r.fire.Write(b[:]); err != nil {
		t.Fatal(err)
	}
}

func (r *uioRig) command(t *testing.T) uint16 {
	t.Helper()
	var b [2]byte
	if _, err := r.config.ReadAt(b[:], cfgCommand); err != nil {
		t.Fatal(err)
	}
	return binary.LittleEndian.Uint16(b[:])
}

// An interrupt ends the sleep; the line stays masked until the next
// sleep, which unmasks it with the other command bits untouched, and a
// sleep with nothing raised times out.
func TestUIOWaitUnmasksBeforeTheNextSleep(t *testing.T) {
	const cmd = 0x0006 // memory space, bus master
	r := newUIORig(t, cmd)
	if r.u.Wait(time.Millisecond) {
		t.Fatalf("Wait reported an interrupt with none raised (stats %+v)", r.u.Stats())
	}
	r.interrupt(t, 1)
	if !r.u.Wait(10 * time.Second) {
		t.Fatalf("Wait missed an interrupt (stats %+v)", r.u.Stats())
	}
	if got := r.command(t); got != cmd|cmdINTxDisable {
		t.Fatalf("after the interrupt command = %#04x, want %#04x: the line must stay masked while the driver polls", got, cmd|cmdINTxDisable)
	}
	if r.u.Wait(time.Millisecond) {
		t.Fatalf("one interrupt woke two sleeps (stats %+v)", r.u.Stats())
	}
	if got := r.command(t); got != cmd {
		t.Fatalf("after the next sleep command = %#04x, want %#04x: the line was not unmasked", got, cmd)
	}
	if s := r.u.Stats(); s.Wakeups != 1 || s.Timeouts != 2 || s.Errors != 0 {
		t.Fatalf("stats %+v, want 1 wake-up, 2 timeouts, no errors", s)
	}
}

// An interrupt taken before the sleep starts is not lost.
func TestUIOWaitPendingInterrupt(t *testing.T) {
	r := newUIORig(t, 0x0406)
	r.u.masked = true // as BindUIO leaves it
	r.interrupt(t, 7)
	if !r.u.Wait(0) {
		t.Fatalf("an interrupt pending before the sleep was lost (stats %+v)", r.u.Stats())
	}
}

// FuzzUIOUnmask: unmasking clears Interrupt Disable and nothing else.
func FuzzUIOUnmask(f *testing.F) {
	f.Add(uint16(0x0406))
	f.Add(uint16(0xffff))
	f.Add(uint16(0))
	f.Fuzz(func(t *testing.T, cmd uint16) {
		r := newUIORig(t, cmd)
		if err := r.u.unmask(); err != nil {
			t.Fatal(err)
		}
		if got, want := r.command(t), cmd&^cmdINTxDisable; got != want {
			t.Fatalf("command %#04x unmasked to %#04x, want %#04x", cmd, got, want)
		}
	})
}

// A sleeping Wait holds no thread in a system call: it is parked in the
// runtime's poller, so with one P the other goroutines run at once
// instead of after sysmon takes the P back from a blocked poll(2).
func TestUIOWaitSleepsInThePoller(t *testing.T) {
	r := newUIORig(t, 0x0006)
	read := sched.Goroutines
	sys0, wait0 := read()
	done := make(chan bool)
	go func() { done <- r.u.Wait(time.Minute) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		sys, wait := read()
		if sys > sys0 {
			r.interrupt(t, 1) // end the sleep, so that cleanup can close
			<-done
			t.Fatalf("the sleeping Wait is in a system call (goroutines not in Go %d, before %d)", sys, sys0)
		}
		if wait > wait0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Wait never parked: goroutines waiting %d (before %d), not in Go %d (before %d), stats %+v", wait, wait0, sys, sys0, r.u.Stats())
		}
		time.Sleep(time.Millisecond)
	}
	r.interrupt(t, 1)
	select {
	case fired := <-done:
		if !fired {
			t.Fatalf("Wait missed the interrupt (stats %+v)", r.u.Stats())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("Wait slept through the interrupt (stats %+v)", r.u.Stats())
	}
}
