package m82574

// RxFault makes the model misbehave on the next Frames received frames so
// that a driver's handling of bad device output can be tested. It is test
// API: real parts do this only when broken.
type RxFault struct {
	Frames int
	// Errors are extended error bits (RxdErrCE, RxdErrRXE, ...) reported
	// in the frame's last descriptor.
	Errors uint32
	// SetLength reports Length in every descriptor of the frame instead of
	// the bytes written (0, or more than the buffer holds).
	SetLength bool
	Length    uint16
	// OutOfOrder holds the frame's descriptor write-backs until the next
	// frame's are written (or FlushRx is called): the head moves past a
	// descriptor that is not yet done while a later one is.
	OutOfOrder bool
	// DMAFault writes the frame's data to an IOVA no driver maps, so the
	// IOMMU refuses it; the descriptors still complete, as on hardware.
	DMAFault bool
}

// unmappedIOVA is near the top of a 39-bit address space, far from any
// allocator's range.
const unmappedIOVA = 0x7f_ffff_0000

// InjectRx arms a receive fault, replacing any armed before.
func (n *NIC) InjectRx(f RxFault) {
	n.rxMu.Lock()
	n.rx.fault = f
	n.rxMu.Unlock()
}

// FlushRx writes back any descriptors held by an OutOfOrder fault.
func (n *NIC) FlushRx() {
	n.rxMu.Lock()
	defer n.rxMu.Unlock()
	if f := n.flushHeld(); f != 0 {
		n.mu.Lock()
		n.counters.RxDMAFaults += f
		n.mu.Unlock()
	}
}
