package netstack_test

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/ether9/ether9/netstack"
)

// filterNIC is a fake NIC with a multicast filter that records what it is
// told and refuses groups listed in refuse.
type filterNIC struct {
	*fakeNIC
	groups map[[6]byte]int
	refuse map[[6]byte]bool
	all    bool
}

func (n *filterNIC) AddMulticast(mac [6]byte) error {
	if n.refuse[mac] {
		return errors.New("filter full")
	}
	n.groups[mac]++
	return nil
}

func (n *filterNIC) RemoveMulticast(mac [6]byte) error {
	if n.groups[mac] == 0 {
		return errors.New("not a member")
	}
	if n.groups[mac]--; n.groups[mac] == 0 {
		delete(n.groups, mac)
	}
	return nil
}

func (n *filterNIC) SetAllMulticast(on bool) error { n.all = on; return nil }

func TestSyncMulticast(t *testing.T) {
	allNodes := [6]byte{0x33, 0x33, 0, 0, 0, 1}
	sn := func(a string) [6]byte {
		b := netip.MustParseAddr(a).As16()
		return [6]byte{0x33, 0x33, 0xff, b[13], b[14], b[15]}
	}
	n := &filterNIC{fakeNIC: newFakeNIC("ether0", 1), groups: map[[6]byte]int{}, refuse: map[[6]byte]bool{}}
	ep, err := netstack.New(n, netstack.Options{Manual: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	addrs := func(s ...string) []netip.Addr {
		var out []netip.Addr
		for _, a := range s {
			out = append(out, netip.MustParseAddr(a))
		}
		return out
	}
	if got := ep.SyncMulticast(addrs("192.0.2.1")); got != 0 || len(n.groups) != 0 {
		t.Fatalf("IPv4 only: %d groups joined, filter %v", got, n.groups)
	}
	ep.SyncMulticast(addrs("192.0.2.1", "2001:db8::1:2:3", "fe80::1"))
	want := map[[6]byte]int{allNodes: 1, sn("2001:db8::1:2:3"): 1, sn("fe80::1"): 1}
	if len(n.groups) != len(want) {
		t.Fatalf("filter %x, want %x", n.groups, want)
	}
	for g, c := range want {
		if n.groups[g] != c {
			t.Errorf("group %x joined %d times, want %d", g, n.groups[g], c)
		}
	}
	// Same addresses again: nothing joined twice. One address gone: its
	// group leaves, the others stay.
	ep.SyncMulticast(addrs("2001:db8::1:2:3", "fe80::1"))
	ep.SyncMulticast(addrs("fe80::1"))
	if len(n.groups) != 2 || n.groups[allNodes] != 1 || n.groups[sn("fe80::1")] != 1 {
		t.Fatalf("after removing an address: %x", n.groups)
	}
	// A group the filter refuses: all-multicast instead.
	n.refuse[sn("2001:db8::99")] = true
	ep.SyncMulticast(addrs("fe80::1", "2001:db8::99"))
	if !n.all {
		t.Errorf("refused group did not turn all-multicast on")
	}
	ep.SyncMulticast(nil)
	if len(n.groups) != 0 {
		t.Errorf("no addresses left, filter still holds %x", n.groups)
	}
}
