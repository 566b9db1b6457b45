package m82576

import (
	"bytes"
	"testing"

	"github.com/ether9/ether9/kernel/sim/nicmodel"
	"github.com/ether9/ether9/kernel/sim/nicmodel/nicmodeltest"
)

// TestRxCsumCases receives the frames the drivers' checksum tests send:
// the advanced write-back's status has IPCS for IPv4, L4I, and UDPCS for
// UDP, and its errors IPE exactly for a bad IPv4 header checksum and L4E
// exactly for a bad TCP or UDP checksum (a UDP checksum of 0 over IPv4
// is none, not an error).
func TestRxCsumCases(t *testing.T) {
	r := newRig(t)
	r.setupRx(0, 16, 2048)
	r.Regs.Write32(nicmodel.RXCSUM, nicmodel.RxcsumIPOFL|nicmodel.RxcsumTUOFL|nicmodel.RxcsumPCSD)
	p := nicmodeltest.Packet{Dst: ourMAC}
	for _, c := range nicmodeltest.CsumCases(p, p) {
		r.Inject(c.Frame)
		got, wb, ok := r.takeRx(0)
		if !ok || !bytes.Equal(got, c.Frame) {
			t.Errorf("%s: received %v, or the data differs", c.Name, ok)
			continue
		}
		want := uint32(RxdL4I)
		if !c.V6 {
			want |= RxdIPCS
		}
		if c.UDP {
			want |= RxdUDPCS
		}
		if c.BadIP {
			want |= RxdErrIPE
		}
		if c.BadL4 {
			want |= RxdErrL4E
		}
		const mask = RxdIPCS | RxdL4I | RxdUDPCS | RxdErrIPE | RxdErrL4E
		if wb.stErr&mask != want {
			t.Errorf("%s: status/errors %#x, want %#x", c.Name, wb.stErr&mask, want)
		}
	}
}
