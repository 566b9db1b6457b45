package mi225

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
	r := newRig(t, 0x15f3)
	r.setupRx(0, 16, 2048, SrrctlDescAdvOne, rctlStd)
	r.Regs.Write32(nicmodel.RXCSUM, nicmodel.RxcsumIPOFL|nicmodel.RxcsumTUOFL|nicmodel.RxcsumPCSD)
	p := nicmodeltest.Packet{Dst: ourMAC}
	for i, c := range nicmodeltest.CsumCases(p, p) {
		r.Wire.B().Send(c.Frame)
		wb := r.rxDesc(0, i)
		if wb.status&(RxdStaDD|RxdStaEOP) != RxdStaDD|RxdStaEOP || !bytes.Equal(r.rxBuf(0, i, wb.len()), c.Frame) {
			t.Errorf("%s: status %#x, or the data differs", c.Name, wb.status)
			continue
		}
		want := uint32(RxdStaL4I)
		if !c.V6 {
			want |= RxdStaIPCS
		}
		if c.UDP {
			want |= RxdStaUDPCS
		}
		if c.BadIP {
			want |= RxdErrIPE
		}
		if c.BadL4 {
			want |= RxdErrL4E
		}
		const mask = RxdStaIPCS | RxdStaL4I | RxdStaUDPCS | RxdErrIPE | RxdErrL4E
		if wb.status&mask != want {
			t.Errorf("%s: status/errors %#x, want %#x", c.Name, wb.status&mask, want)
		}
	}
}
