package nicmodel

import (
	"testing"

	"github.com/ether9/ether9/kernel/sim"
)

type message struct {
	addr uint64
	data uint32
}

type messages []message

func (m *messages) Message(addr uint64, data uint32) { *m = append(*m, message{addr, data}) }

// A vector's event sends the entry's message only while MSI-X is enabled
// and neither the function nor the entry is masked; otherwise it waits
// in the pending bit array and goes out as the last mask clears (PCI
// Local Bus 3.0, 6.8.2).
func TestMSIXDelivery(t *testing.T) {
	c := sim.NewConfigSpace(0x8086, 0x10c9, ClassEthernet, 0)
	var got messages
	x := AddMSIX(c, 4, 3, 0x2000, &got)
	cap := capAt(t, c, CapMSIX)
	ctl := func(v uint32) {
		if err := c.Write(cap+2, 2, v); err != nil {
			t.Fatal(err)
		}
		x.ConfigWritten()
	}
	entry := func(v int, addr uint64, data uint32, masked bool) {
		x.Write(uint32(v*16), 8, addr)
		ctrl := uint64(data)
		if masked {
			ctrl |= 1 << 32
		}
		x.Write(uint32(v*16+8), 8, ctrl)
	}
	pba := func() uint64 { return x.Read(0x2000, 8) }

	x.Signal(1) // MSI-X off: pending
	if len(got) != 0 || pba() != 1<<1 {
		t.Fatalf("disabled: sent %v, PBA %#x", got, pba())
	}
	ctl(msixCtlEnable | msixCtlFnMask)
	entry(1, 0xfee00000, 0x41, false)
	if len(got) != 0 {
		t.Fatalf("function masked: sent %v", got)
	}
	ctl(msixCtlEnable) // function unmasked: the pending message goes
	if len(got) != 1 || got[0] != (message{0xfee00000, 0x41}) || pba() != 0 {
		t.Fatalf("unmasked: sent %v, PBA %#x", got, pba())
	}
	entry(2, 0xfee00000, 0x42, true)
	x.Signal(2)
	x.Signal(2) // two events while masked: one pending bit, one message
	if len(got) != 1 || pba() != 1<<2 {
		t.Fatalf("entry masked: sent %v, PBA %#x", got, pba())
	}
	if v := x.Read(0x2000, 4); v != 1<<2 {
		t.Errorf("PBA low dword %#x", v)
	}
	x.Write(2*16+12, 4, 0) // unmask the entry
	if len(got) != 2 || got[1].data != 0x42 || pba() != 0 {
		t.Fatalf("entry unmasked: sent %v, PBA %#x", got, pba())
	}
	x.Signal(1)
	x.Signal(9) // beyond the table: dropped
	if len(got) != 3 || got[2].data != 0x41 || pba() != 0 {
		t.Fatalf("unmasked vector: sent %v, PBA %#x", got, pba())
	}
	x.Write(0x2000, 8, ^uint64(0)) // the pending bits are read-only
	if pba() != 0 {
		t.Errorf("PBA written: %#x", pba())
	}
}
