//go:build !(linux && amd64)

package pci

import (
	"errors"
	"runtime"
)

// HostPorts is only available on Linux on amd64: other architectures have
// no port I/O, and other systems no iopl.
func HostPorts() (PortIO, error) {
	return nil, errors.New("pci: legacy config ports need linux/amd64, this is " + runtime.GOOS + "/" + runtime.GOARCH)
}
