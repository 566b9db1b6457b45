package pci

import (
	"slices"
	"testing"
)

type fakeWindow map[uint32]uint32

func (w fakeWindow) Read32(off uint32) uint32     { return w[off] }
func (w fakeWindow) Write32(off uint32, v uint32) { w[off] = v }

// Program fills the entries in use, unmasked, masks the rest, enables
// MSI-X with Function Mask clear, and turns MSI and INTx off.
func TestMSIXProgram(t *testing.T) {
	bus := newFakeBus()
	f := bus.add(fnA, newFakeFn(0x8086, 0x10c9, 0x020000, HeaderNormal))
	msi := f.cap(CapMSI, slices.Concat(le16(msiCtl64Bit), make([]byte, 10)))
	f.mask(msi+msiControl, 2, msiCtlEnable)
	f.put(msi+msiControl, 2, msiCtl64Bit|msiCtlEnable) // left on by firmware
	x := f.cap(CapMSIX, slices.Concat(le16(3), le32(0x100|3), le32(0x2000|3)))
	f.mask(x+msixControl, 2, msixCtlEnable|msixCtlMask)
	f.mask(RegCommand, 2, 0xffff)
	m, err := ReadMSIX(bus, fnA, x)
	if err != nil {
		t.Fatal(err)
	}
	w := fakeWindow{}
	for i := range uint32(4) {
		w[0x100+16*i+msixEntryCtl] = msixEntryMasked
	}
	w[0x100+16*3+msixEntryCtl] = 0 // left unmasked: Program masks it
	msgs := []Message{{0xfee00000, 0x30}, {0xfee01000, 0x31}, {0xfee00000, 0x32}}
	if err := m.Program(bus, fnA, w, msgs); err != nil {
		t.Fatal(err)
	}
	for i, msg := range msgs {
		e := 0x100 + 16*uint32(i)
		if lo, hi, d, ctl := w[e], w[e+4], w[e+8], w[e+12]; uint64(hi)<<32|uint64(lo) != msg.Addr || d != msg.Data || ctl&msixEntryMasked != 0 {
			t.Errorf("entry %d: address %#x:%#x data %#x control %#x, want %+v unmasked", i, hi, lo, d, ctl, msg)
		}
	}
	if w[0x100+16*3+msixEntryCtl]&msixEntryMasked == 0 {
		t.Error("the entry not in use is unmasked")
	}
	got, _ := ReadMSIX(bus, fnA, x)
	if !got.Enabled || got.FunctionMask {
		t.Errorf("after Program %+v, want enabled, function unmasked", got)
	}
	if ctl := f.get(msi+msiControl, 2); ctl&msiCtlEnable != 0 {
		t.Errorf("MSI control %#x: still enabled", ctl)
	}
	if cmd := f.get(RegCommand, 2); cmd&CmdINTxDisable == 0 {
		t.Errorf("command %#x: INTx not disabled", cmd)
	}
	if err := m.Program(bus, fnA, w, make([]Message, 5)); err == nil {
		t.Error("five messages for a table of four: no error")
	}
	if err := m.Disable(bus, fnA); err != nil {
		t.Fatal(err)
	}
	if got, _ := ReadMSIX(bus, fnA, x); got.Enabled {
		t.Error("enabled after Disable")
	}
}
