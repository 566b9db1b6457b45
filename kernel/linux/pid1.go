//go:build linux

package linux

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// mount is one file system PID 1 mounts for itself: the kernel leaves an
// initramfs with nothing but the root (DEVTMPFS_MOUNT is off in Debian).
type mount struct {
	source, target, fstype string
	flags                  uintptr
	data                   string
}

var mounts = []mount{
	{"proc", "/proc", "proc", unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC, ""},
	{"sysfs", "/sys", "sysfs", unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC, ""},
	{"devtmpfs", "/dev", "devtmpfs", unix.MS_NOSUID, "mode=0755"},
	{"tmpfs", "/tmp", "tmpfs", unix.MS_NOSUID | unix.MS_NODEV, "mode=1777"},
	{"hugetlbfs", "/dev/hugepages", "hugetlbfs", unix.MS_NOSUID | unix.MS_NODEV, ""},
}

// Mount mounts proc, sysfs, devtmpfs, tmpfs on /tmp and hugetlbfs. A file
// system already mounted there counts as done.
func Mount() error {
	var errs []error
	for _, m := range mounts {
		if err := os.MkdirAll(m.target, 0o755); err != nil {
			errs = append(errs, fmt.Errorf("mount %s: %w", m.target, err))
			continue
		}
		err := unix.Mount(m.source, m.target, m.fstype, m.flags, m.data)
		if err != nil && !errors.Is(err, unix.EBUSY) {
			errs = append(errs, fmt.Errorf("mount %s on %s: %w", m.fstype, m.target, err))
		}
	}
	return errors.Join(errs...)
}

// Console opens the serial console, makes it standard input, output and
// error, and sends the runtime's fatal error output (an unrecovered panic,
// a fault) there too, so PID 1 never dies silently. It tries /dev/console,
// then /dev/ttyS0. It returns out, the console to write to, and in, the
// console opened again for reading.
//
// in is its own open file, non-blocking and read through the runtime's
// network poller: a read that blocks in the system call (as a file whose
// Fd was taken does) keeps the one P until sysmon takes it back, and the
// console shell waits for a key most of the time. out and the standard
// files stay blocking, so that the runtime's own writes of a crash to
// fd 2 are never cut short by EAGAIN.
func Console() (out, in *os.File, err error) {
	var errs []error
	for _, path := range []string{"/dev/console", "/dev/ttyS0"} {
		f, err := os.OpenFile(path, os.O_RDWR|unix.O_NOCTTY, 0)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for fd := 0; fd <= 2; fd++ {
			if err := unix.Dup2(int(f.Fd()), fd); err != nil {
				errs = append(errs, fmt.Errorf("console: dup %s to fd %d: %w", path, fd, err))
			}
		}
		if len(errs) > 0 {
			// Standard error is not the console: have the runtime write
			// its fatal output there as well. (When it is, this would
			// print every crash twice.)
			if err := debug.SetCrashOutput(f, debug.CrashOptions{}); err != nil {
				errs = append(errs, fmt.Errorf("console: crash output: %w", err))
			}
		}
		in, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOCTTY, 0)
		if err != nil {
			errs = append(errs, fmt.Errorf("console: open %s to read: %w", path, err))
			in = nil
		}
		return f, in, errors.Join(errs...)
	}
	return nil, nil, fmt.Errorf("console: %w", errors.Join(errs...))
}

// EnablePortIO raises the I/O privilege level to 3 on every OS thread of
// the process. iopl is per thread: port I/O from a goroutine that lands on a
// thread without it is a general protection fault that kills PID 1.
// Threads created later inherit the level from the thread that creates them.
func EnablePortIO() error {
	if _, _, errno := syscall.AllThreadsSyscall(unix.SYS_IOPL, 3, 0, 0); errno != 0 {
		return fmt.Errorf("iopl 3 on all threads: %w", errno)
	}
	return nil
}

// Cmdline reads the kernel command line.
func Cmdline() (string, error) {
	b, err := os.ReadFile("/proc/cmdline")
	if err != nil {
		return "", fmt.Errorf("cmdline: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// Uptime is how long the kernel has been running, from /proc/uptime, in
// seconds: the time to compare with a stopwatch started with QEMU.
func Uptime() (float64, error) {
	b, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return 0, fmt.Errorf("uptime: %w", err)
	}
	var up float64
	if _, err := fmt.Sscanf(string(b), "%f", &up); err != nil {
		return 0, fmt.Errorf("uptime: parse %q: %w", b, err)
	}
	return up, nil
}

// PowerOff flushes file systems and turns the machine off. QEMU exits.
// It returns only if the kernel refused.
func PowerOff() error { return halt(unix.LINUX_REBOOT_CMD_POWER_OFF, "power off") }

// Reboot flushes file systems and restarts the machine.
func Reboot() error { return halt(unix.LINUX_REBOOT_CMD_RESTART, "reboot") }

func halt(cmd int, what string) error {
	unix.Sync()
	if err := unix.Reboot(cmd); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}
