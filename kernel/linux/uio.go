//go:build linux

package linux

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ether9/ether9/pci"
)

// Offsets and bits of PCI configuration space the interrupt path uses.
const (
	cfgCommand     = 0x04
	cmdINTxDisable = 1 << 10 // Command: Interrupt Disable
	cfgIntPin      = 0x3d    // Interrupt Pin: 0 is none, 1..4 INTA..INTD
)

// ErrNoINTx says that a function has no legacy interrupt pin.
var ErrNoINTx = errors.New("no INTx pin")

// LoadModule loads the kernel module in file (finit_module). A module
// that is already loaded is not an error.
func LoadModule(file string) error {
	f, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("load module: %w", err)
	}
	defer f.Close()
	if err := unix.FinitModule(int(f.Fd()), "", 0); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("load module %s: %w", filepath.Base(file), err)
	}
	return nil
}

// UIO is a PCI function's legacy interrupt handed to user space by
// uio_pci_generic. When the line fires Linux masks it with the command
// register's Interrupt Disable bit and counts an event on /dev/uioN; Wait
// sleeps in poll(2) for that event and clears the bit again before its
// next sleep, so the line stays masked while the driver polls. INTx is
// level-triggered: a cause the device latched while the line was masked
// fires as soon as it is unmasked, and is not lost. Linux does not
// enable bus mastering or touch the IOMMU for it.
//
// UIO is a kernel.Waiter; one Wait runs at a time.
type UIO struct {
	Dev string // uioN
	IRQ int    // Linux's number of the line

	mu     sync.Mutex
	events *EventFile // /dev/uioN, a 4-byte count
	config *os.File   // the function's config space in sysfs
	masked bool       // Linux masked the line at the last event we took

	wakeups, timeouts, errs atomic.Uint64
	lastErr                 atomic.Pointer[error]
}

// BindUIO binds the function at a to uio_pci_generic (its modules must be
// loaded) and opens its interrupt. A function without an INTx pin is
// ErrNoINTx.
func BindUIO(a pci.Addr) (*UIO, error) {
	name := fmt.Sprintf("%04x:%02x:%02x.%x", a.Seg, a.Bus, a.Dev, a.Fn)
	dir := filepath.Join("/sys/bus/pci/devices", name)
	config, err := os.OpenFile(filepath.Join(dir, "config"), os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("uio %s: %w", name, err)
	}
	u, err := bindUIO(dir, name, config)
	if err != nil {
		config.Close()
		return nil, fmt.Errorf("uio %s: %w", name, err)
	}
	return u, nil
}

func bindUIO(dir, name string, config *os.File) (*UIO, error) {
	var pin [1]byte
	if _, err := config.ReadAt(pin[:], cfgIntPin); err != nil {
		return nil, fmt.Errorf("interrupt pin: %w", err)
	}
	if pin[0] == 0 {
		return nil, ErrNoINTx
	}
	drv, _ := os.Readlink(filepath.Join(dir, "driver"))
	if filepath.Base(drv) != "uio_pci_generic" {
		if drv != "" {
			return nil, fmt.Errorf("bound to %s", filepath.Base(drv))
		}
		// driver_override binds this one function, not every function
		// with its IDs as new_id would.
		if err := os.WriteFile(filepath.Join(dir, "driver_override"), []byte("uio_pci_generic"), 0); err != nil {
			return nil, fmt.Errorf("driver_override: %w", err)
		}
		if err := os.WriteFile("/sys/bus/pci/drivers/uio_pci_generic/bind", []byte(name), 0); err != nil {
			return nil, fmt.Errorf("bind uio_pci_generic: %w", err)
		}
	}
	devs, _ := filepath.Glob(filepath.Join(dir, "uio", "uio*"))
	if len(devs) != 1 {
		return nil, fmt.Errorf("uio_pci_generic made %d uio devices", len(devs))
	}
	u := &UIO{Dev: filepath.Base(devs[0]), config: config}
	if b, err := os.ReadFile(filepath.Join(dir, "irq")); err == nil {
		u.IRQ, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	ev, err := os.OpenFile("/dev/"+u.Dev, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	u.events = NewEventFile(ev, 4)
	// The line may have been left masked by an interrupt before we
	// opened it.
	u.masked = true
	return u, nil
}

// newUIO is a UIO on given files, for tests: events reads as /dev/uioN
// does (4 bytes of event count) and config as the function's config space.
func newUIO(events, config *os.File) *UIO {
	return &UIO{Dev: "uio-test", events: NewEventFile(events, 4), config: config}
}

// Wait unmasks the line if an interrupt masked it, then sleeps until it
// fires or timeout passes. It reports whether it fired. The sleep is
// the runtime's network poller's, not a blocking system call's
// (EventFile says why).
func (u *UIO) Wait(timeout time.Duration) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.masked {
		if err := u.unmask(); err != nil {
			u.fail(err)
			time.Sleep(timeout)
			return false
		}
		u.masked = false
	}
	fired, err := u.events.Wait(timeout)
	switch {
	case err != nil:
		u.fail(err)
		time.Sleep(timeout)
		return false
	case !fired:
		u.timeouts.Add(1)
		return false
	}
	u.masked = true
	u.wakeups.Add(1)
	return true
}

// unmask clears Interrupt Disable, leaving the other command bits as they
// are. Linux set the bit in its handler and cannot set it again before it
// is cleared (the line is masked), so the read-modify-write does not race
// with it.
func (u *UIO) unmask() error {
	var b [2]byte
	if _, err := u.config.ReadAt(b[:], cfgCommand); err != nil {
		return fmt.Errorf("read command: %w", err)
	}
	cmd := binary.LittleEndian.Uint16(b[:])
	if cmd&cmdINTxDisable == 0 {
		return nil
	}
	binary.LittleEndian.PutUint16(b[:], cmd&^cmdINTxDisable)
	if _, err := u.config.WriteAt(b[:], cfgCommand); err != nil {
		return fmt.Errorf("write command: %w", err)
	}
	return nil
}

func (u *UIO) fail(err error) {
	u.errs.Add(1)
	u.lastErr.Store(&err)
}

// String names the interrupt: "uio INTx 11".
func (u *UIO) String() string { return fmt.Sprintf("uio INTx %d", u.IRQ) }

// UIOStats counts a UIO's sleeps by how they ended.
type UIOStats struct {
	Wakeups  uint64 // the line fired
	Timeouts uint64 // the timeout passed
	Errors   uint64 // a poll, read or unmask failed; the sleep was a timer
	LastErr  error
}

// Stats returns the counters.
func (u *UIO) Stats() UIOStats {
	s := UIOStats{Wakeups: u.wakeups.Load(), Timeouts: u.timeouts.Load(), Errors: u.errs.Load()}
	if e := u.lastErr.Load(); e != nil {
		s.LastErr = *e
	}
	return s
}

// Counts returns how many sleeps the line ended and how many timed out.
func (u *UIO) Counts() (wakeups, timeouts uint64) {
	return u.wakeups.Load(), u.timeouts.Load()
}

// Close closes the interrupt's files; the function stays bound.
func (u *UIO) Close() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	return errors.Join(u.events.Close(), u.config.Close())
}
