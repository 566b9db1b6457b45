package usblegacy

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/pci"
)

// fuzzRegs is a register window whose every dword reads from the fuzzer's
// bytes, as a broken or hostile controller might answer; writes land in
// it too.
type fuzzRegs struct{ b []byte }

func (r fuzzRegs) at(off uint32) int { return int(off) % (len(r.b) - 3) &^ 3 }
func (r fuzzRegs) Read32(off uint32) uint32 {
	return binary.LittleEndian.Uint32(r.b[r.at(off):])
}
func (r fuzzRegs) Write32(off uint32, v uint32) { binary.LittleEndian.PutUint32(r.b[r.at(off):], v) }
func (r fuzzRegs) Read64(off uint32) uint64     { return uint64(r.Read32(off)) }
func (r fuzzRegs) Write64(off uint32, v uint64) { r.Write32(off, uint32(v)) }

// Whatever the controller answers, the hand-off ends, within Timeout of
// the clock, with an answer or an error, never a panic or a loop.
func FuzzXHCI(f *testing.F) {
	seed := make([]byte, 0x600)
	binary.LittleEndian.PutUint32(seed[0x10:], 0x140<<16)               // xECP: 0x500
	binary.LittleEndian.PutUint32(seed[0x500:], capLegacy|legBIOSOwned) // owned by the BIOS
	f.Add(seed)
	f.Add([]byte{0x10, 0, 0, 0, 1, 1, 1, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < 8 {
			return
		}
		clock := sim.NewClock()
		_, _ = XHCI(fuzzRegs{append([]byte(nil), b...)}, clock)
		if clock.Now() > Timeout+10*time.Millisecond {
			t.Fatalf("the hand-off waited %v", clock.Now())
		}
	})
}

// fuzzConfig is a configuration space read from the fuzzer's bytes, as a
// broken or hostile controller might answer; writes land in it too.
type fuzzConfig struct{ r fuzzRegs }

func (c fuzzConfig) ReadConfig(_ pci.Addr, off, size int) (uint32, error) {
	if off < 0 || off+size > 0x100 {
		return 0, fmt.Errorf("config read of %d bytes at %#x", size, off)
	}
	return c.r.Read32(uint32(off)), nil
}

func (c fuzzConfig) WriteConfig(_ pci.Addr, off, size int, v uint32) error {
	if off < 0 || off+size > 0x100 {
		return fmt.Errorf("config write of %d bytes at %#x", size, off)
	}
	c.r.Write32(uint32(off), v)
	return nil
}

// Whatever an EHCI controller's HCCPARAMS and configuration space answer,
// the hand-off ends within Timeout with an answer or an error.
func FuzzEHCI(f *testing.F) {
	seed := make([]byte, 0x100)
	binary.LittleEndian.PutUint32(seed[0x08:], 0x68<<8)                // HCCPARAMS.EECP
	binary.LittleEndian.PutUint32(seed[0x68:], capLegacy|legBIOSOwned) // owned by the BIOS
	f.Add(seed)
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0x40, 0, 0, 1, 0x40, 1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < 12 {
			return
		}
		clock := sim.NewClock()
		r := fuzzRegs{append([]byte(nil), b...)}
		_, _ = EHCI(fuzzConfig{r}, pci.Addr{}, r, clock)
		if clock.Now() > Timeout+10*time.Millisecond {
			t.Fatalf("the hand-off waited %v", clock.Now())
		}
	})
}
