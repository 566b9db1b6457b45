package pci

import (
	"errors"
	"testing"
)

// FuzzProbe feeds arbitrary configuration space (and arbitrary BAR write
// masks) to Probe: it must neither panic nor loop, must list only
// capabilities inside config space, and must leave COMMAND as it found it.
func FuzzProbe(f *testing.F) {
	f.Add(nicFn().cfg[:], []byte{0xff, 0xff, 0xfe, 0xff})
	loop := nicFn()
	loop.cfg[0x6c+1] = 0x40
	f.Add(loop.cfg[:], []byte{0, 0, 0, 0})
	f.Add(bridgeFn(0, 1, 1).cfg[:], []byte{0xf0, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, cfg, barMask []byte) {
		bus := newFakeBus()
		fn := newFakeFn(0, 0, 0, 0)
		copy(fn.cfg[:], cfg)
		for i := 0; i < 24; i++ {
			if len(barMask) > 0 {
				fn.wmask[RegBAR0+i] = barMask[i%len(barMask)]
			}
		}
		bus.add(fnA, fn)
		cmd := fn.get(RegCommand, 2)
		got, err := Probe(bus, fnA, Options{})
		if got == nil {
			if !errors.Is(err, ErrAbsent) {
				t.Fatalf("no function, error %v", err)
			}
			return
		}
		for _, c := range got.Caps {
			if c.Offset < 0x40 || c.Offset >= ExtConfigSize || (c.Extended && c.Offset < RegExtCapStart) {
				t.Fatalf("capability %v outside its space", c)
			}
		}
		if len(got.Caps) > maxCaps+maxExtCaps {
			t.Fatalf("%d capabilities", len(got.Caps))
		}
		for _, b := range got.BARs {
			if b.Kind != BARNone && b.Size&(b.Size-1) != 0 {
				t.Fatalf("%v: size not a power of two", b)
			}
		}
		if now := fn.get(RegCommand, 2); now != cmd {
			t.Fatalf("COMMAND %#x after probe, was %#x", now, cmd)
		}
	})
}
