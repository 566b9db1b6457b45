package nicmodel

import (
	"testing"

	"github.com/ether9/ether9/kernel/sim/nicmodel/nicmodeltest"
)

// TestCheckRxCsumCases runs CheckRx, with both offloads on, over the
// frames the drivers' receive checksum tests send: it flags exactly the
// checksum each case broke.
func TestCheckRxCsumCases(t *testing.T) {
	mac := [6]byte{2, 0, 0, 0, 0, 1}
	for _, c := range nicmodeltest.CsumCases(nicmodeltest.Packet{Dst: mac}, nicmodeltest.Packet{Dst: mac}) {
		p := Parse(c.Frame, 0x8100)
		want := RxChecks{IP: !c.V6, IPBad: c.BadIP, L4: true, UDP: c.UDP, L4Bad: c.BadL4}
		if got := CheckRx(&p, true, true); got != want {
			t.Errorf("%s: %+v, want %+v", c.Name, got, want)
		}
	}
}
