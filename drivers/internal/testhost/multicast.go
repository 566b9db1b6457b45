package testhost

import (
	"bytes"
	"testing"

	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/kernel/sim/wire"
)

// CheckMulticastFilter drives n's multicast filter through its control
// commands and nic.MulticastFilter, sending frames from end: a group's
// frames come up only after it joins; another group's do not; a removal
// that leaves another group on the same MTA bit keeps that bit; allmulti
// passes everything; bad commands are refused. Whether a frame passed
// is told by a unicast frame sent after it: once that one is up, the
// group frame is up too or was dropped.
func CheckMulticastFilter(t testing.TB, n nic.NIC, end *wire.End) {
	t.Helper()
	mac := n.MAC()
	seq := byte(0)
	passes := func(dst [6]byte) bool {
		t.Helper()
		seq++
		group := make([]byte, 60)
		copy(group, dst[:])
		copy(group[6:], []byte{2, 0, 0, 0, 0, 0x99})
		group[12], group[13], group[14] = 0x88, 0xb5, seq // local experimental EtherType
		marker := bytes.Clone(group)
		copy(marker, mac[:])
		end.Send(group)
		end.Send(marker)
		got := false
		for {
			for _, p := range PollFrames(t, n, "multicast filter") {
				b := p.Data.Flatten()
				p.Data.Release()
				if len(b) < 15 || b[14] != seq {
					continue
				}
				if bytes.Equal(b[:6], dst[:]) {
					got = true
				}
				if bytes.Equal(b[:6], mac[:]) {
					return got
				}
			}
		}
	}
	group := [6]byte{0x33, 0x33, 0xff, 0x00, 0x00, 0x02}
	sibling := group // the same bits 47:36, another group
	sibling[3] = 0x77
	other := [6]byte{0x33, 0x33, 0x00, 0x00, 0x00, 0x01}
	if passes(group) {
		t.Fatal("a group's frame came up before it joined")
	}
	for _, bad := range []string{"addmulti zz", "addmulti 02:00:00:00:00:01", "remmulti 33:33:00:00:00:09", "allmulti maybe"} {
		if err := n.Ctl(bad); err == nil {
			t.Errorf("Ctl(%q) accepted", bad)
		}
	}
	if err := n.Ctl("addmulti 33:33:ff:00:00:02"); err != nil {
		t.Fatal(err)
	}
	if !passes(group) {
		t.Fatal("a joined group's frame was dropped")
	}
	if passes(other) {
		t.Fatal("another group's frame passed")
	}
	f, ok := n.(nic.MulticastFilter)
	if !ok {
		t.Fatalf("%T does not implement nic.MulticastFilter", n)
	}
	if err := f.AddMulticast(sibling); err != nil {
		t.Fatal(err)
	}
	if err := n.Ctl("remmulti 33:33:ff:00:00:02"); err != nil {
		t.Fatal(err)
	}
	if !passes(group) {
		t.Fatal("the bit a member shares was cleared")
	}
	if err := f.RemoveMulticast(sibling); err != nil {
		t.Fatal(err)
	}
	if passes(group) {
		t.Fatal("a group's frame came up after it left")
	}
	if err := n.Ctl("allmulti on"); err != nil {
		t.Fatal(err)
	}
	if !passes(other) {
		t.Fatal("allmulti on dropped a group's frame")
	}
	if err := f.SetAllMulticast(false); err != nil {
		t.Fatal(err)
	}
	if passes(other) {
		t.Fatal("allmulti off passed a group's frame")
	}
	if err := f.RemoveMulticast(group); err == nil {
		t.Error("a group removed twice")
	}
}
