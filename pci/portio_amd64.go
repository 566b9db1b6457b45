package pci

// CPUPorts is PortIO through the IN and OUT instructions. The calling
// thread must have I/O privilege: see HostPorts.
type CPUPorts struct{}

func (CPUPorts) In8(port uint16) uint8       { return inb(port) }
func (CPUPorts) In16(port uint16) uint16     { return inw(port) }
func (CPUPorts) In32(port uint16) uint32     { return inl(port) }
func (CPUPorts) Out8(port uint16, v uint8)   { outb(port, v) }
func (CPUPorts) Out16(port uint16, v uint16) { outw(port, v) }
func (CPUPorts) Out32(port uint16, v uint32) { outl(port, v) }

// Implemented in portio_amd64.s.
func inb(port uint16) uint8
func inw(port uint16) uint16
func inl(port uint16) uint32
func outb(port uint16, v uint8)
func outw(port uint16, v uint16)
func outl(port uint16, v uint32)
