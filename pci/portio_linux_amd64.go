package pci

import (
	"fmt"
	"syscall"
)

// HostPorts raises the I/O privilege level of every thread of the process
// (iopl is per thread, and a goroutine may run on any of them: an IN on a
// thread without it is a general protection fault) and returns the CPU's
// port I/O. It needs CAP_SYS_RAWIO and a kernel with X86_IOPL_IOPERM; it
// fails in a binary built with cgo, where AllThreadsSyscall is refused.
func HostPorts() (PortIO, error) {
	if _, _, errno := syscall.AllThreadsSyscall(syscall.SYS_IOPL, 3, 0, 0); errno != 0 {
		return nil, fmt.Errorf("pci: iopl(3) on all threads: %w", errno)
	}
	return CPUPorts{}, nil
}
