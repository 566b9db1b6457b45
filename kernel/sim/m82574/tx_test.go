package m82574

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/ether9/ether9/kernel/sim/nicmodel"
	"github.com/ether9/ether9/kernel/sim/nicmodel/nicmodeltest"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

const (
	l3Off  = header.EthernetMinimumSize
	l4Off4 = l3Off + header.IPv4MinimumSize
	l4Off6 = l3Off + header.IPv6MinimumSize
)

func TestTxLegacyPlain(t *testing.T) {
	r := newRig(t, M82574L)
	r.setupTx()
	f := udp4(peerMAC, payloadBytes(300, 5))
	// Split over two buffers; RS on the last asks for DD.
	a := r.putTx(legacyTx(r.txBuf(0, f[:100]), 100, TxdIFCS, 0, 0))
	b := r.putTx(legacyTx(r.txBuf(1, f[100:]), len(f)-100, TxdEOP|TxdIFCS|TxdRS, 0, 0))
	r.kickTx()
	out := r.sent()
	if len(out) != 1 || !bytes.Equal(out[0], f) {
		t.Fatalf("wire carried %d frames; want the packet unchanged", len(out))
	}
	if r.txDesc(b)[12]&TxdStaDD == 0 || r.txDesc(a)[12]&TxdStaDD != 0 {
		t.Fatalf("DD: first %v last %v; want only the RS descriptor written back",
			r.txDesc(a)[12]&TxdStaDD != 0, r.txDesc(b)[12]&TxdStaDD != 0)
	}
	if h := r.Regs.Read32(TDH); h != uint32(r.txTail) {
		t.Fatalf("TDH %d, want %d", h, r.txTail)
	}
	if icr := r.Regs.Read32(nicmodel.ICR); icr&(nicmodel.IntTXDW|nicmodel.IntTXQE) != nicmodel.IntTXDW|nicmodel.IntTXQE {
		t.Fatalf("ICR %#x, want TXDW and TXQE", icr)
	}
	if g := r.Regs.Read32(nicmodel.GPTC); g != 1 {
		t.Fatalf("GPTC %d", g)
	}
	if o := r.Regs.Read32(nicmodel.GOTCL); o != uint32(len(f)+nicmodel.FCSLen) {
		t.Fatalf("GOTCL %d, want %d", o, len(f)+nicmodel.FCSLen)
	}

	// A short frame is padded to 60 bytes (TCTL.PSP).
	short := f[:42]
	r.putTx(legacyTx(r.txBuf(2, short), len(short), TxdEOP|TxdRS, 0, 0))
	r.kickTx()
	out = r.sent()
	if len(out) != 1 || len(out[0]) != nicmodel.MinFrame || !bytes.Equal(out[0][:42], short) || out[0][59] != 0 {
		t.Fatalf("short frame went out as %d bytes", len(out[0]))
	}
}

func TestTxLegacyChecksum(t *testing.T) {
	r := newRig(t, M82574L)
	r.setupTx()
	f := udp4(peerMAC, payloadBytes(100, 9))
	want := bytes.Clone(f)
	// Software leaves the pseudo-header sum in the UDP checksum field.
	l4 := f[l4Off4:]
	header.UDP(l4).SetChecksum(header.PseudoHeaderChecksum(header.UDPProtocolNumber, srcIP4, dstIP4, uint16(len(l4))))
	r.putTx(legacyTx(r.txBuf(0, f), len(f), TxdEOP|TxdIC|TxdRS, l4Off4+6, l4Off4))
	r.kickTx()
	out := r.sent()
	if len(out) != 1 || !bytes.Equal(out[0], want) {
		t.Fatalf("legacy checksum insertion: got %x want %x", out[0][l4Off4+6:l4Off4+8], want[l4Off4+6:l4Off4+8])
	}
}

func TestTxChecksumOffload(t *testing.T) {
	r := newRig(t, M82574L)
	r.setupTx()
	payload := payloadBytes(777, 2)
	f := tcp4(peerMAC, payload, header.TCPFlagAck|header.TCPFlagPsh, false, header.TCPMinimumSize+len(payload))
	r.putTx(contextTx(txContext{
		ipcss: l3Off, ipcso: l3Off + 10, ipcse: l4Off4 - 1,
		tucss: l4Off4, tucso: l4Off4 + 16, tucmd: TucmdTCP | TucmdIP,
	}))
	// The packet in three pieces; POPTS of the first data descriptor count.
	r.putTx(dataTx(r.txBuf(0, f[:20]), 20, 0, PoptsIXSM|PoptsTXSM))
	r.putTx(dataTx(r.txBuf(1, f[20:500]), 480, 0, 0))
	last := r.putTx(dataTx(r.txBuf(2, f[500:]), len(f)-500, TxdEOP|TxdRS, 0))
	r.kickTx()
	out := r.sent()
	if len(out) != 1 || len(out[0]) != len(f) {
		t.Fatalf("%d frames", len(out))
	}
	g := out[0]
	ip := header.IPv4(g[l3Off:])
	if !ip.IsChecksumValid() {
		t.Fatal("IPv4 header checksum not inserted")
	}
	nicmodeltest.CheckL4(t, g, false)
	if !bytes.Equal(g[l4Off4+header.TCPMinimumSize:], payload) {
		t.Fatal("payload changed")
	}
	if r.txDesc(last)[12]&TxdStaDD == 0 {
		t.Fatal("no DD on the EOP descriptor")
	}
}

type tsoCase struct {
	name    string
	v6      bool
	payload int
	mss     int
}

// The hardware segments alike on both parts: whether TSO is worth using
// on the I219 is the driver's decision.
func TestTxTSO(t *testing.T) {
	for _, pers := range []Personality{M82574L, I219LM} {
		for _, tc := range []tsoCase{
			{"ipv4-10000-1448", false, 10000, 1448},
			{"ipv4-exact-multiple", false, 4 * 1460, 1460},
			{"ipv4-one-segment", false, 500, 1460},
			{"ipv6-9000-1440", true, 9000, 1440},
		} {
			t.Run(pers.Name+"/"+tc.name, func(t *testing.T) { testTSO(t, pers, tc) })
		}
	}
}

func tcp6(payload []byte, flags header.TCPFlags) []byte {
	const ipLen, tcpLen = header.IPv6MinimumSize, header.TCPMinimumSize
	f := ethernet(peerMAC, ourMAC, header.IPv6ProtocolNumber, ipLen+tcpLen+len(payload))
	f = f[:l3Off+ipLen+tcpLen]
	ip := header.IPv6(f[l3Off:])
	ip.Encode(&header.IPv6Fields{
		PayloadLength: 0, TransportProtocol: header.TCPProtocolNumber, HopLimit: 64,
		SrcAddr: srcIP6, DstAddr: dstIP6,
	})
	header.TCP(ip[ipLen:]).Encode(&header.TCPFields{
		SrcPort: 40000, DstPort: 80, SeqNum: 0xfffff000, AckNum: 1,
		DataOffset: tcpLen, Flags: flags, WindowSize: 1000,
	})
	f = append(f, payload...)
	// TSO: the pseudo-header sum without the length.
	header.TCP(f[l4Off6:]).SetChecksum(header.PseudoHeaderChecksum(header.TCPProtocolNumber, srcIP6, dstIP6, 0))
	return f
}

func testTSO(t *testing.T, pers Personality, tc tsoCase) {
	r := newRig(t, pers)
	r.setupTx()
	payload := payloadBytes(tc.payload, 11)
	flags := header.TCPFlagAck | header.TCPFlagPsh | header.TCPFlagFin | header.TCPFlagCwr
	var f []byte
	var c txContext
	if tc.v6 {
		f = tcp6(payload, flags)
		c = txContext{ipcss: l3Off, tucss: l4Off6, tucso: l4Off6 + 16, hdrlen: l4Off6 + 20, tucmd: TucmdTCP | TucmdTSE}
	} else {
		f = tcp4(peerMAC, payload, flags, false, 0)
		header.IPv4(f[l3Off:]).SetTotalLength(0)
		c = txContext{ipcss: l3Off, ipcso: l3Off + 10, ipcse: l4Off4 - 1, tucss: l4Off4, tucso: l4Off4 + 16,
			hdrlen: l4Off4 + 20, tucmd: TucmdTCP | TucmdIP | TucmdTSE}
	}
	hdr := int(c.hdrlen)
	c.mss, c.paylen = uint16(tc.mss), uint32(len(payload))
	r.putTx(contextTx(c))
	// Header in its own buffer, payload in two: as a driver maps an skb.
	half := hdr + len(payload)/2
	r.putTx(dataTx(r.txBuf(0, f[:hdr]), hdr, TxdTSE, PoptsIXSM|PoptsTXSM))
	r.putTx(dataTx(r.txBuf(1, f[hdr:half]), half-hdr, TxdTSE, 0))
	r.putTx(dataTx(r.txBuf(2, f[half:]), len(f)-half, TxdTSE|TxdEOP|TxdRS, 0))
	r.kickTx()
	out := r.sent()

	for i, g := range out {
		if !bytes.Equal(g[:12], f[:12]) {
			t.Fatalf("segment %d: Ethernet addresses changed", i)
		}
	}
	seq := header.TCP(f[l4Off4:]).SequenceNumber()
	if tc.v6 {
		seq = header.TCP(f[l4Off6:]).SequenceNumber()
	}
	nicmodeltest.CheckSegments(t, out, nicmodeltest.TSOCase{
		V6: tc.v6, MSS: tc.mss, Seq: seq, ID: 0x1234, Flags: flags, Payload: payload,
	})
	want := len(out)
	if n := r.Regs.Read32(nicmodel.TSCTC); n != 1 {
		t.Fatalf("TSCTC %d, want 1", n)
	}
	if n := r.Regs.Read32(nicmodel.GPTC); n != uint32(want) {
		t.Fatalf("GPTC %d, want %d", n, want)
	}
}

// A TSO context the hardware cannot use (MSS 0) sends nothing and counts
// a failed TSO context.
func TestTxTSOBadContext(t *testing.T) {
	r := newRig(t, M82574L)
	r.setupTx()
	f := tcp4(peerMAC, payloadBytes(3000, 1), header.TCPFlagAck, false, 0)
	r.putTx(contextTx(txContext{ipcss: l3Off, tucss: l4Off4, tucso: l4Off4 + 16, hdrlen: l4Off4 + 20,
		tucmd: TucmdTCP | TucmdIP | TucmdTSE, paylen: 3000}))
	d := r.putTx(dataTx(r.txBuf(0, f), len(f), TxdTSE|TxdEOP|TxdRS, PoptsTXSM))
	r.kickTx()
	if out := r.sent(); len(out) != 0 {
		t.Fatalf("%d frames sent from a TSO packet with MSS 0", len(out))
	}
	if n := r.Regs.Read32(nicmodel.TSCTFC); n != 1 {
		t.Fatalf("TSCTFC %d", n)
	}
	if r.txDesc(d)[12]&TxdStaDD == 0 {
		t.Fatal("descriptor not completed")
	}
}

func TestTxVLANInsertAndLinkDown(t *testing.T) {
	r := newRig(t, M82574L)
	r.setupTx()
	r.Regs.Write32(nicmodel.CTRL, r.Regs.Read32(nicmodel.CTRL)|nicmodel.CtrlVME)
	f := udp4(peerMAC, payloadBytes(100, 1))
	d := dataTx(r.txBuf(0, f), len(f), TxdEOP|TxdVLE|TxdRS, 0)
	binary.LittleEndian.PutUint16(d[14:], 0x2064) // PCP 1, VID 100
	r.putTx(d)
	r.kickTx()
	out := r.sent()
	if len(out) != 1 || len(out[0]) != len(f)+4 {
		t.Fatalf("%d frames", len(out))
	}
	g := out[0]
	if binary.BigEndian.Uint16(g[12:]) != 0x8100 || binary.BigEndian.Uint16(g[14:]) != 0x2064 ||
		!bytes.Equal(g[16:], f[12:]) || !bytes.Equal(g[:12], f[:12]) {
		t.Fatalf("tagged frame % x", g[:20])
	}

	r.nic.SetLink(false, 1000)
	i := r.putTx(legacyTx(r.txBuf(1, f), len(f), TxdEOP|TxdRS, 0, 0))
	r.kickTx()
	if out := r.sent(); len(out) != 0 {
		t.Fatal("frame sent with the link down")
	}
	if r.txDesc(i)[12]&TxdStaDD == 0 || r.nic.Counters().TxNoLink != 1 {
		t.Fatal("with the link down the descriptor completes and the frame is counted as dropped")
	}
}

// A descriptor pointing at memory the device cannot reach completes but
// sends nothing.
func TestTxDMAFault(t *testing.T) {
	r := newRig(t, M82574L)
	r.setupTx()
	i := r.putTx(legacyTx(unmappedIOVA, 100, TxdEOP|TxdRS, 0, 0))
	r.kickTx()
	if out := r.sent(); len(out) != 0 {
		t.Fatal("frame sent from unreadable memory")
	}
	if c := r.nic.Counters(); c.TxDMAFaults != 1 || r.txDesc(i)[12]&TxdStaDD == 0 {
		t.Fatalf("counters %+v", c)
	}
}

// TX processing waits for TCTL.EN and resumes where TDH stands.
func TestTxWaitsForEnableAndWraps(t *testing.T) {
	r := newRig(t, M82574L)
	r.setupTx()
	r.Regs.Write32(nicmodel.TCTL, nicmodel.TctlPSP)
	f := udp4(peerMAC, payloadBytes(60, 1))
	for i := range ringSize - 1 {
		r.putTx(legacyTx(r.txBuf(i, f), len(f), TxdEOP, 0, 0))
	}
	r.kickTx()
	if n := len(r.sent()); n != 0 {
		t.Fatalf("%d frames sent with TCTL.EN clear", n)
	}
	r.Regs.Write32(nicmodel.TCTL, nicmodel.TctlPSP|nicmodel.TctlEN)
	if n := len(r.sent()); n != ringSize-1 {
		t.Fatalf("%d frames after enabling, want %d", n, ringSize-1)
	}
	// Wrap: more frames than the ring holds, in rounds.
	for range 3 {
		for i := range 10 {
			r.putTx(legacyTx(r.txBuf(i, f), len(f), TxdEOP, 0, 0))
		}
		r.kickTx()
		if n := len(r.sent()); n != 10 {
			t.Fatalf("%d frames, want 10", n)
		}
		if h, tl := r.Regs.Read32(TDH), r.Regs.Read32(TDT); h != tl {
			t.Fatalf("TDH %d TDT %d", h, tl)
		}
	}
}

// With DeferTx a TDT write only records the tail: the descriptors are
// processed, TxPerTouch at a time, when the driver next touches the
// transmit registers or reads ICR, and each buffer is read then, not at
// the doorbell.
func TestTxDeferred(t *testing.T) {
	m := newRig(t, M82574L).M
	if _, err := New(Options{DeferTx: true, TxPerTouch: -1}, m.Port(nicAddr), m.IRQ(nicAddr)); err == nil {
		t.Error("a negative TxPerTouch was accepted")
	}
	r := newRigWith(t, Options{MAC: ourMAC, DeferTx: true, TxPerTouch: 2})
	r.setupTx()
	var frames [][]byte
	queue := func(seed byte) {
		f := udp4(peerMAC, payloadBytes(100, seed))
		frames = append(frames, f)
		i := r.txTail
		r.putTx(legacyTx(r.txBuf(i, f), len(f), TxdEOP|TxdIFCS|TxdRS, 0, 0))
	}
	dd := func(i int) bool { return r.txDesc(i)[12]&TxdStaDD != 0 }
	var wire [][]byte
	onWire := func() int { wire = append(wire, r.sent()...); return len(wire) }
	for i := range 4 {
		queue(byte(i))
	}
	r.kickTx()
	if n := onWire(); n != 0 || dd(0) {
		t.Fatalf("%d frames sent at the doorbell, DD %v", n, dd(0))
	}
	for _, off := range []uint32{nicmodel.STATUS, nicmodel.GPTC, RDH} {
		r.Regs.Read32(off)
	}
	if n := onWire(); n != 0 {
		t.Fatalf("%d frames sent for registers that are not the transmit path's", n)
	}

	if h := r.Regs.Read32(TDH); h != 2 {
		t.Fatalf("TDH %d after one touch, want 2", h)
	}
	if n := onWire(); n != 2 || !dd(1) || dd(2) {
		t.Fatalf("%d frames sent, DD of descriptors 1 and 2 %v %v: want 2, true, false", n, dd(1), dd(2))
	}
	// The driver rewrites a buffer the device has not read: its new bytes
	// go out.
	frames[3] = udp4(peerMAC, payloadBytes(100, 0x77))
	r.txBuf(3, frames[3])
	// The next doorbell processes what was handed over before it.
	queue(4)
	r.kickTx()
	if c := r.nic.Counters(); c.TxPackets != 4 {
		t.Fatalf("%d packets taken after the second doorbell, want 4", c.TxPackets)
	}
	// The poll loop's ICR read takes the last one, and shows its cause.
	if icr := r.Regs.Read32(nicmodel.ICR); icr&nicmodel.IntTXDW == 0 || r.nic.Counters().TxPackets != 5 {
		t.Fatalf("ICR %#x with %d packets taken, want TXDW and 5", icr, r.nic.Counters().TxPackets)
	}
	if n := onWire(); n != len(frames) {
		t.Fatalf("%d frames on the wire, want %d", n, len(frames))
	}
	for i, f := range wire {
		if !bytes.Equal(f, frames[i]) {
			t.Errorf("frame %d on the wire is not the one queued (its buffer as the device read it)", i)
		}
	}
}
