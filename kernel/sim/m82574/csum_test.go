package m82574

import (
	"bytes"
	"testing"

	"github.com/ether9/ether9/kernel/sim/nicmodel"
	"github.com/ether9/ether9/kernel/sim/nicmodel/nicmodeltest"
)

// TestRxCsumCases receives the frames the drivers' checksum tests send:
// the extended write-back's status has IPCS for IPv4 and TCPCS or UDPCS
// for the segment, and its errors IPE exactly for a bad IPv4 header
// checksum and TCPE exactly for a bad TCP or UDP checksum (a UDP
// checksum of 0 over IPv4 is none, not an error).
func TestRxCsumCases(t *testing.T) {
	r := newRig(t, M82574L)
	r.setupRx(rctlBase, true)
	r.Regs.Write32(nicmodel.RXCSUM, nicmodel.RxcsumIPOFL|nicmodel.RxcsumTUOFL|nicmodel.RxcsumPCSD)
	p := nicmodeltest.Packet{Dst: ourMAC}
	for i, c := range nicmodeltest.CsumCases(p, p) {
		r.Wire.B().Send(c.Frame)
		wb := decodeExt(r.rxDesc(i))
		if !wb.has(RxdDD|RxdEOP) || !bytes.Equal(r.rxBuf(i)[:wb.length], c.Frame) {
			t.Errorf("%s: status %#x, or the data differs", c.Name, wb.stErr)
			continue
		}
		want := uint32(RxdTCPCS)
		if c.UDP {
			want = RxdUDPCS
		}
		if !c.V6 {
			want |= RxdIPCS
		}
		if c.BadIP {
			want |= RxdErrIPE
		}
		if c.BadL4 {
			want |= RxdErrTCPE
		}
		const mask = RxdIPCS | RxdTCPCS | RxdUDPCS | RxdErrIPE | RxdErrTCPE
		if wb.stErr&mask != want {
			t.Errorf("%s: status/errors %#x, want %#x", c.Name, wb.stErr&mask, want)
		}
	}
}
