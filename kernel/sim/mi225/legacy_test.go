package mi225

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/ether9/ether9/kernel/sim/nicmodel"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

func TestRxLegacyDescriptors(t *testing.T) {
	r := newRig(t, 0x15f3)
	r.Regs.Write32(nicmodel.RXCSUM, nicmodel.RxcsumIPOFL|nicmodel.RxcsumTUOFL|14) // PCSS: the IP header
	r.setupRx(0, 8, 2048, SrrctlDescLegacy, rctlStd)
	good := tcpFrame(false, ourMAC, payloadBytes(300, 1), header.TCPFlagAck, true, 0)
	bad := udpFrame(false, ourMAC, payloadBytes(300, 2), true)
	bad[len(bad)-1] ^= 1
	r.Wire.B().Send(good)
	r.Wire.B().Send(bad)
	le := binary.LittleEndian
	for i, c := range []struct {
		frame          []byte
		status, errors byte
	}{
		{good, RxdStaDD | RxdStaEOP | RxdStaL4I | RxdStaIPCS, 0},
		{bad, RxdStaDD | RxdStaEOP | RxdStaUDPCS | RxdStaL4I | RxdStaIPCS, RxdLegacyTCPE},
	} {
		d := r.rx[0].ring.Buf[i*descLen : (i+1)*descLen]
		if addr := le.Uint64(d); addr != uint64(r.rx[0].bufs.Phys)+uint64(i*2048) {
			t.Fatalf("descriptor %d: buffer address %#x overwritten", i, addr)
		}
		if l := int(le.Uint16(d[8:])); l != len(c.frame) || !bytes.Equal(r.rxBuf(0, i, l), c.frame) {
			t.Fatalf("descriptor %d: length %d, want %d", i, l, len(c.frame))
		}
		if d[12] != c.status || d[13] != c.errors {
			t.Fatalf("descriptor %d: status %#x errors %#x, want %#x %#x", i, d[12], d[13], c.status, c.errors)
		}
		if sum := le.Uint16(d[10:]); sum != checksum.Checksum(c.frame[14:], 0) {
			t.Fatalf("descriptor %d: packet checksum %#04x", i, sum)
		}
	}
	r.Regs.Write32(nicmodel.RXCSUM, 0)
	r.Wire.B().Send(good)
	if st := r.rx[0].ring.Buf[2*descLen+12]; st != RxdStaDD|RxdStaEOP|RxdLegacyIXSM {
		t.Fatalf("status %#x with offloads off, want DD EOP IXSM", st)
	}
}

func legacyTx(addr uint64, n int, cmd uint32, cso, css byte, vlan uint16) (d [descLen]byte) {
	le := binary.LittleEndian
	le.PutUint64(d[0:], addr)
	le.PutUint32(d[8:], uint32(n)|uint32(cso)<<16|cmd)
	le.PutUint32(d[12:], uint32(css)<<8|uint32(vlan)<<16)
	return d
}

func TestTxLegacyDescriptors(t *testing.T) {
	r := newRig(t, 0x15f3)
	r.setupTx(0, 8)
	f := tcpFrame(false, peerMAC, payloadBytes(500, 3), header.TCPFlagAck, true, 0)
	want := bytes.Clone(f)
	l4 := macLen + header.IPv4MinimumSize
	// Software leaves the pseudo-header sum in the TCP checksum field.
	s := header.PseudoHeaderChecksum(header.TCPProtocolNumber, srcIP4, dstIP4, uint16(len(f)-l4))
	binary.BigEndian.PutUint16(f[l4+16:], s)
	cut := 100
	a1 := r.txBuf(0, 0, f[:cut])
	a2 := r.txBuf(0, 1, f[cut:])
	r.putTx(0, legacyTx(a1, cut, TxdCmdIC, byte(l4+16), byte(l4), 0))
	last := r.putTx(0, legacyTx(a2, len(f)-cut, TxdCmdEOP|TxdCmdRS|TxdCmdVLE, 0, 0, 0x0042))
	r.kickTx(0)
	out := r.sent()
	if len(out) != 1 {
		t.Fatalf("sent %d frames", len(out))
	}
	g := out[0]
	if binary.BigEndian.Uint16(g[12:]) != 0x8100 || binary.BigEndian.Uint16(g[14:]) != 0x0042 {
		t.Fatalf("tag % x, want 81 00 00 42", g[12:16])
	}
	untagged := append(bytes.Clone(g[:12]), g[16:]...)
	if !bytes.Equal(untagged, want) {
		t.Fatal("frame with the inserted checksum differs from the one built whole")
	}
	if st := binary.LittleEndian.Uint32(r.tx[0].ring.Buf[last*descLen+12:]); st&TxdStaDD == 0 {
		t.Fatal("DD not written back")
	}
}
