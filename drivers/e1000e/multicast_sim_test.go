package e1000e_test

import (
	"testing"

	"github.com/ether9/ether9/drivers/nic"
)

// A group's frames reach the driver only after it joins; a removal that
// leaves another group on the same hash bit keeps that bit; allmulti
// passes everything; bad commands change nothing.
func TestSimMulticastFilter(t *testing.T) {
	mc := newMachine(t, rigOpt{})
	defer mc.close(t)
	group := [6]byte{0x33, 0x33, 0xff, 0x00, 0x00, 0x02}
	sibling := group // same bits 47:36, another group
	sibling[3] = 0x77
	other := [6]byte{0x33, 0x33, 0x00, 0x00, 0x00, 0x01}
	send := func(dst [6]byte) int {
		f := mc.frame(60, 1)
		copy(f, dst[:])
		mc.wire.B().Send(f)
		got := mc.poll()
		for _, p := range got {
			p.Data.Release()
		}
		return len(got)
	}
	if n := send(group); n != 0 {
		t.Fatalf("group frame received before joining (%d)", n)
	}
	for _, bad := range []string{"addmulti zz", "addmulti 02:00:00:00:00:01", "remmulti 33:33:00:00:00:09", "allmulti maybe", "addmulti 33:33:00:00:00:01:02:03"} {
		if err := mc.NIC.Ctl(bad); err == nil {
			t.Errorf("Ctl(%q) accepted", bad)
		}
	}
	if err := mc.NIC.Ctl("addmulti 33:33:ff:00:00:02"); err != nil {
		t.Fatal(err)
	}
	if n := send(group); n != 1 {
		t.Fatalf("joined group: %d frames", n)
	}
	if n := send(other); n != 0 {
		t.Fatalf("other group passed the filter (%d)", n)
	}
	d, ok := mc.NIC.(nic.MulticastFilter)
	if !ok {
		t.Fatal("e1000e does not implement nic.MulticastFilter")
	}
	if err := d.AddMulticast(sibling); err != nil {
		t.Fatal(err)
	}
	if err := mc.NIC.Ctl("remmulti 33:33:ff:00:00:02"); err != nil {
		t.Fatal(err)
	}
	if n := send(group); n != 1 {
		t.Fatalf("bit shared with a member was cleared: %d frames", n)
	}
	if err := d.RemoveMulticast(sibling); err != nil {
		t.Fatal(err)
	}
	if n := send(group); n != 0 {
		t.Fatalf("group frame received after leaving (%d)", n)
	}
	if err := mc.NIC.Ctl("allmulti on"); err != nil {
		t.Fatal(err)
	}
	if n := send(other); n != 1 {
		t.Fatalf("allmulti on: %d frames", n)
	}
	// The MTU path rewrites RCTL: allmulti must survive it.
	if err := mc.NIC.SetMTU(1500); err != nil {
		t.Fatal(err)
	}
	if n := send(other); n != 1 {
		t.Fatalf("allmulti lost on an MTU change: %d frames", n)
	}
	if err := mc.NIC.Ctl("allmulti off"); err != nil {
		t.Fatal(err)
	}
	if n := send(other); n != 0 {
		t.Fatalf("allmulti off: %d frames", n)
	}
	if err := d.RemoveMulticast(group); err == nil {
		t.Errorf("removing a group twice accepted")
	}
}
