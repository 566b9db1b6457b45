package fakedev

import (
	"testing"

	"github.com/ether9/ether9/drivers/internal/failtest"
)

func TestEffects(t *testing.T) {
	const icr, ctrl, rst, plain = 0xc0, 0x0, 1 << 26, 0x100
	f := NewFile(map[uint32]uint32{icr: 5}, Effects{
		ClearOnRead: func(off uint32) bool { return off == icr },
		Write: func(r map[uint32]uint32, off, v uint32) {
			if off == ctrl {
				v &^= rst
			}
			r[off] = v
		},
	})
	if v := f.Read32(icr); v != 5 {
		t.Errorf("first ICR read %#x, want 5", v)
	}
	if v := f.Read32(icr); v != 0 {
		t.Errorf("ICR read twice %#x, want 0", v)
	}
	f.Write32(ctrl, rst|3)
	if v := f.Get(ctrl); v != 3 {
		t.Errorf("CTRL after a reset write %#x, want the reset bit cleared", v)
	}
	f.Write64(plain, 0x1122334455667788)
	if v := f.Read64(plain); v != 0x1122334455667788 {
		t.Errorf("64-bit round trip %#x", v)
	}
	if f.Writes(plain) != 1 || f.Writes(plain+4) != 1 || f.Writes(ctrl) != 1 || f.Writes(icr) != 0 {
		t.Errorf("write counts %d %d %d %d", f.Writes(plain), f.Writes(plain+4), f.Writes(ctrl), f.Writes(icr))
	}
	f.Set(icr, 9)
	if f.Get(icr) != 9 || f.Get(icr) != 9 || f.Writes(icr) != 0 {
		t.Error("Set or Get had a side effect")
	}
}

func TestReceiveAddress(t *testing.T) {
	ral, rah := ReceiveAddress([6]byte{0x52, 0x54, 0x00, 0x12, 0x34, 0x56})
	if ral != 0x12005452 || rah != 0x80005634 {
		t.Errorf("RAL %#x RAH %#x", ral, rah)
	}
}

func TestCheck(t *testing.T) {
	f := NewFile(map[uint32]uint32{0x10: 1, 0x20: 2}, Effects{})
	errs := failtest.Run(func(tb testing.TB) { f.Check(tb, map[uint32]uint32{0x10: 1, 0x20: 3, 0x30: 0}) })
	if len(errs) != 1 || errs[0] != "register 0x20 = 0x2, want 0x3" {
		t.Errorf("Check reported %q, want register 0x20 alone", errs)
	}
}
