package igb

import (
	"errors"
	"testing"

	"github.com/ether9/ether9/drivers/adv"
	"github.com/ether9/ether9/drivers/xsk"
)

func TestSteerFilters(t *testing.T) {
	r := newRig(t)
	defer r.Close(t)
	s, err := r.d.Steer(xsk.Filter{EtherType: 0x88b5}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if v := r.regs.Get(adv.ETQF + uint32(4*s)); v != 0x88b5|3<<16|adv.ETQF_FILTER_ENABLE|adv.ETQF_QUEUE_ENABLE {
		t.Errorf("ETQF %#x", v)
	}
	u, err := r.d.Steer(xsk.Filter{UDPPort: 4791}, 2)
	if err != nil {
		t.Fatal(err)
	}
	i := uint32(4 * (u - slotTwoTuple))
	// The rig's 82576: FTQF compares protocol and port alone with the
	// source and destination address and source port bypassed; IMIR holds
	// 4791 (0x12b7) as on the wire.
	if v := r.regs.Get(FTQF + i); v != protoUDP|adv.TTQF_QUEUE_ENABLE|2<<16|FTQF_MASK_SOURCE_ADDR_BP|FTQF_MASK_DEST_ADDR_BP|FTQF_MASK_SOURCE_PORT_BP {
		t.Errorf("FTQF %#x", v)
	}
	if v := r.regs.Get(adv.IMIR + i); v&0xffff != 0xb712 || v&adv.IMIR_PORT_BP != 0 {
		t.Errorf("IMIR %#x", v)
	}
	if _, err := r.d.Steer(xsk.Filter{UDPPort: 1}, 9); !errors.Is(err, xsk.ErrNoQueue) {
		t.Errorf("steer to queue 9: %v", err)
	}
	if _, err := r.d.Steer(xsk.Filter{UDPPort: 1, EtherType: 2}, 0); err == nil {
		t.Error("filter with two conditions accepted")
	}
	for k := 1; k < adv.NumIMIR; k++ {
		if _, err := r.d.Steer(xsk.Filter{UDPPort: uint16(k)}, 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.d.Steer(xsk.Filter{UDPPort: 99}, 0); err == nil {
		t.Error("ninth 2-tuple filter accepted")
	}
	if err := r.d.Unsteer(u); err != nil || r.regs.Get(FTQF+i) != 0 {
		t.Errorf("unsteer: %v, FTQF %#x", err, r.regs.Get(FTQF+i))
	}
	if err := r.d.Unsteer(u); err == nil {
		t.Error("double unsteer accepted")
	}
	if err := r.d.Unsteer(s); err != nil || r.regs.Get(adv.ETQF+uint32(4*s)) != 0 {
		t.Errorf("unsteer ethertype: %v", err)
	}
}

func TestIMIRPortWireOrder(t *testing.T) {
	for _, c := range []struct {
		port uint16
		want uint32
	}{{9, 0x0900}, {319, 0x3f01}, {0x12b7, 0xb712}, {0xffff, 0xffff}} {
		if got := imirPort(c.port); got != c.want {
			t.Errorf("port %d: IMIR field %#x, want %#x", c.port, got, c.want)
		}
	}
}

func TestPortOnlyByMAC(t *testing.T) {
	// Only the 82576's register is a 5-tuple filter; on the later parts the
	// bypass bits are reserved and must stay clear.
	for typ, info := range macInfo {
		if info.Flags&FlagPortFilter == 0 {
			continue
		}
		want := uint32(0)
		if typ == Mac82576 {
			want = FTQF_MASK_SOURCE_ADDR_BP | FTQF_MASK_DEST_ADDR_BP | FTQF_MASK_SOURCE_PORT_BP
		}
		if got := portOnly[typ]; got != want {
			t.Errorf("%v: %#x, want %#x", typ, got, want)
		}
	}
}
