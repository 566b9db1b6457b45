package nicmodel

import "github.com/ether9/ether9/kernel"

// Window returns a register file's accessors as a kernel.Regs, for tests
// that drive a model without a bus. A 64-bit access is two 32-bit ones,
// low dword first.
func Window(read32 func(off uint32) uint32, write32 func(off, v uint32)) kernel.Regs {
	return window{read32, write32}
}

type window struct {
	read  func(off uint32) uint32
	write func(off, v uint32)
}

func (w window) Read32(off uint32) uint32     { return w.read(off) }
func (w window) Write32(off uint32, v uint32) { w.write(off, v) }
func (w window) Read64(off uint32) uint64     { return ReadSplit(w.read, off, 8) }
func (w window) Write64(off uint32, v uint64) { WriteSplit(w.write, off, 8, v) }
