package pci

import (
	"encoding/binary"
	"slices"
	"testing"
)

func TestMSIProgram(t *testing.T) {
	for _, wide := range []bool{true, false} {
		bus := newFakeBus()
		f := bus.add(fnA, newFakeFn(0x8086, 0x10d3, 0x020000, HeaderNormal))
		ctl := uint16(2 << msiCtlMMCShift)
		if wide {
			ctl |= msiCtl64Bit
		}
		off := f.cap(CapMSI, slices.Concat(le16(ctl), make([]byte, 10)))
		f.mask(off+msiControl, 2, msiCtlEnable|7<<msiCtlMMEShift)
		f.mask(off+msiAddrLow, 4, 0xfffffffc)
		f.mask(off+msiAddrHi, 4, 0xffffffff)
		f.mask(off+msiData64, 2, 0xffff)                        // the 32-bit layout's data is under msiAddrHi's mask
		f.put(off+msiControl, 2, uint32(ctl|3<<msiCtlMMEShift)) // firmware left 8 messages on

		m, err := ReadMSI(bus, fnA, off)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Program(bus, fnA, 0xfee01000, 0x0051); err != nil {
			t.Fatal(err)
		}
		got, _ := ReadMSI(bus, fnA, off)
		if !got.Enabled || got.Allocated != 1 {
			t.Errorf("64-bit %v: after Program %+v, want enabled with 1 message", wide, got)
		}
		data := msiData32
		if wide {
			data = msiData64
			if hi := f.get(off+msiAddrHi, 4); hi != 0 {
				t.Errorf("address high %#x", hi)
			}
		}
		if lo := f.get(off+msiAddrLow, 4); lo != 0xfee01000 {
			t.Errorf("64-bit %v: address %#x, want 0xfee01000", wide, lo)
		}
		if d := binary.LittleEndian.Uint16(f.cfg[off+data:]); d != 0x0051 {
			t.Errorf("64-bit %v: data %#x, want 0x51", wide, d)
		}
		if err := m.Program(bus, fnA, 1<<32|0xfee00000, 0x51); (err == nil) != wide {
			t.Errorf("64-bit %v: a 64-bit address gave %v", wide, err)
		}
		if err := m.Disable(bus, fnA); err != nil {
			t.Fatal(err)
		}
		if got, _ := ReadMSI(bus, fnA, off); got.Enabled {
			t.Errorf("64-bit %v: enabled after Disable", wide)
		}
	}
}

// FindMSI and FindMSIX find the capability wherever it sits in the list
// and say plainly when a function has none.
func TestFindMSI(t *testing.T) {
	bus := newFakeBus()
	f := bus.add(fnA, newFakeFn(0x8086, 0x10d3, 0x020000, HeaderNormal))
	f.cap(CapPM, make([]byte, 6))
	off := f.cap(CapMSI, slices.Concat(le16(msiCtl64Bit), make([]byte, 10)))
	m, ok, err := FindMSI(bus, fnA)
	if err != nil || !ok || m.Offset != off || !m.Addr64 {
		t.Errorf("FindMSI: %+v %v %v; want the capability at %#x, 64-bit", m, ok, err, off)
	}
	x, ok, err := FindMSIX(bus, fnA)
	if err != nil || ok {
		t.Errorf("FindMSIX on a function without MSI-X: %+v %v %v; want none and no error", x, ok, err)
	}
}
