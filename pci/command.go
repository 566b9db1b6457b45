package pci

import "fmt"

// SetCommand sets the bits set and clears the bits clear of COMMAND with
// one 16-bit read and one 16-bit write (never a 32-bit write, which would
// clear the write-one-to-clear STATUS bits next to it). It reads COMMAND
// back and fails if a bit did not take, and returns the old value.
func SetCommand(c Config, a Addr, set, clear uint16) (uint16, error) {
	old, err := read16(c, a, RegCommand)
	if err != nil {
		return 0, fmt.Errorf("pci %v: read command: %w", a, err)
	}
	if old == 0xffff {
		return old, fmt.Errorf("pci %v: command reads all ones: %w", a, ErrAbsent)
	}
	v := old&^clear | set
	if v == old {
		return old, nil
	}
	if err := c.WriteConfig(a, RegCommand, 2, uint32(v)); err != nil {
		return old, fmt.Errorf("pci %v: write command %#x: %w", a, v, err)
	}
	got, err := read16(c, a, RegCommand)
	if err != nil {
		return old, fmt.Errorf("pci %v: read back command: %w", a, err)
	}
	if got&(set|clear) != set {
		return old, fmt.Errorf("pci %v: command reads %#x after writing %#x (set %#x, clear %#x)", a, got, v, set, clear)
	}
	return old, nil
}

func setCommand(c Config, a Addr, set, clear uint16) error {
	_, err := SetCommand(c, a, set, clear)
	return err
}

// EnableMemory turns on memory space decoding: the BARs answer.
func EnableMemory(c Config, a Addr) error { return setCommand(c, a, CmdMemory, 0) }

// DisableMemory turns off memory space decoding.
func DisableMemory(c Config, a Addr) error { return setCommand(c, a, 0, CmdMemory) }

// EnableIO turns on I/O space decoding.
func EnableIO(c Config, a Addr) error { return setCommand(c, a, CmdIO, 0) }

// DisableIO turns off I/O space decoding: drivers here use memory BARs only.
func DisableIO(c Config, a Addr) error { return setCommand(c, a, 0, CmdIO) }

// EnableBusMaster lets the function start DMA. Do it only once its IOMMU
// domain holds what it may touch.
func EnableBusMaster(c Config, a Addr) error { return setCommand(c, a, CmdBusMaster, 0) }

// DisableBusMaster stops the function's DMA.
func DisableBusMaster(c Config, a Addr) error { return setCommand(c, a, 0, CmdBusMaster) }

// DisableINTx stops legacy interrupt assertion (for MSI, MSI-X or polling).
func DisableINTx(c Config, a Addr) error { return setCommand(c, a, CmdINTxDisable, 0) }

// EnableINTx allows legacy interrupt assertion.
func EnableINTx(c Config, a Addr) error { return setCommand(c, a, 0, CmdINTxDisable) }
