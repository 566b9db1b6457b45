package m82576

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/ether9/ether9/kernel/sim/nicmodel"
	"github.com/ether9/ether9/kernel/sim/nicmodel/nicmodeltest"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// offloadReady clears the checksums a sender leaves to the hardware: the
// IPv4 header checksum to 0, the L4 checksum to the pseudo-header sum
// over the given length (0 for TSO, which adds each segment's).
func offloadReady(f []byte, v6 bool, proto tcpip.TransportProtocolNumber, l4len int) {
	var src, dst tcpip.Address
	var l4 []byte
	if v6 {
		ip := header.IPv6(f[14:])
		src, dst, l4 = ip.SourceAddress(), ip.DestinationAddress(), f[14+40:]
	} else {
		ip := header.IPv4(f[14:])
		ip.SetChecksum(0)
		src, dst, l4 = ip.SourceAddress(), ip.DestinationAddress(), f[14+20:]
	}
	sum := header.PseudoHeaderChecksum(proto, src, dst, uint16(l4len))
	if proto == header.TCPProtocolNumber {
		header.TCP(l4).SetChecksum(sum)
	} else {
		header.UDP(l4).SetChecksum(sum)
	}
}

func TestTxChecksumOffload(t *testing.T) {
	r := newRig(t)
	r.setupTx(2, 16)
	const ipv4 = TucmdIPv4

	// IPv4/TCP over two buffers, context slot 1.
	payload := bytes.Repeat([]byte("abc"), 100)
	f := tcp4(dstIP4, srcIP4, 80, 1234, payload)
	offloadReady(f, false, header.TCPProtocolNumber, len(f)-34)
	r.post(2,
		ctxDesc(0, 14, 20, ipv4|L4TTCP<<TucmdL4TSh, 0, 20, 1),
		dataDesc(r.buf(2, f[:54]), 54, 0, 1<<OlinfoIdxSh|OlinfoIXSM|OlinfoTXSM|uint32(len(f))<<OlinfoPayLenSh),
		dataDesc(r.buf(2, f[54:]), len(f)-54, TxdEOP|TxdRS, 0))
	// IPv4/UDP in one buffer, context slot 0.
	u := udp4(dstIP4, srcIP4, 53, 1234, []byte("answer"))
	offloadReady(u, false, header.UDPProtocolNumber, len(u)-34-int(60-48)) // UDP length excludes padding
	r.post(2,
		ctxDesc(0, 14, 20, ipv4|L4TUDP<<TucmdL4TSh, 0, 8, 0),
		dataDesc(r.buf(2, u), len(u), TxdEOP|TxdRS, OlinfoIXSM|OlinfoTXSM|uint32(len(u))<<OlinfoPayLenSh))
	// IPv6/TCP.
	s6 := tcp6(dstIP6, srcIP6, 80, 1234, payload)
	offloadReady(s6, true, header.TCPProtocolNumber, len(s6)-54)
	r.post(2,
		ctxDesc(0, 14, 40, L4TTCP<<TucmdL4TSh, 0, 20, 0),
		dataDesc(r.buf(2, s6), len(s6), TxdEOP|TxdRS, OlinfoTXSM|uint32(len(s6))<<OlinfoPayLenSh))

	out := r.Sent()
	if len(out) != 3 {
		t.Fatalf("%d frames sent, want 3", len(out))
	}
	if !bytes.Equal(header.TCP(nicmodeltest.CheckL4(t, out[0], false)).Payload(), payload) {
		t.Error("TCP payload changed")
	}
	nicmodeltest.CheckL4(t, out[1], false)
	nicmodeltest.CheckL4(t, out[2], true)
	if r.nic.Counters().TxQueue[2] != 3 || r.Regs.Read32(nicmodel.GPTC) != 3 {
		t.Errorf("counters %+v", r.nic.Counters())
	}
}

// tsoPacket builds one large TCP packet as a stack hands it to TSO.
func tsoPacket(v6 bool, payload []byte) []byte {
	var f []byte
	if v6 {
		f = tcp6(dstIP6, srcIP6, 80, 1234, payload)
	} else {
		f = tcp4(dstIP4, srcIP4, 80, 1234, payload)
	}
	l3 := 20
	if v6 {
		l3 = 40
	}
	tcp := header.TCP(f[14+l3:])
	tcp.SetFlags(uint8(header.TCPFlagAck | header.TCPFlagPsh | header.TCPFlagFin))
	offloadReady(f, v6, header.TCPProtocolNumber, 0)
	return f
}

func TestTxTSO(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		name := map[bool]string{false: "IPv4", true: "IPv6"}[v6]
		t.Run(name, func(t *testing.T) {
			r := newRig(t)
			r.setupTx(0, 64)
			payload := make([]byte, 10000)
			for i := range payload {
				payload[i] = byte(i * 7)
			}
			f := tsoPacket(v6, payload)
			l3, tucmd := 20, uint32(TucmdIPv4|L4TTCP<<TucmdL4TSh)
			if v6 {
				l3, tucmd = 40, L4TTCP<<TucmdL4TSh
			}
			hdr := 14 + l3 + 20
			const mss = 1448
			// Headers in one buffer, payload over three.
			ds := []txDesc{
				ctxDesc(0, 14, l3, tucmd, mss, 20, 0),
				dataDesc(r.buf(0, f[:hdr]), hdr, TxdTSE, OlinfoIXSM|OlinfoTXSM|uint32(len(payload))<<OlinfoPayLenSh),
			}
			for off := hdr; off < len(f); off += 4000 {
				end := min(off+4000, len(f))
				cmd := uint8(TxdTSE)
				if end == len(f) {
					cmd |= TxdEOP | TxdRS
				}
				ds = append(ds, dataDesc(r.buf(0, f[off:end]), end-off, cmd, 0))
			}
			r.post(0, ds...)
			out := r.Sent()
			nicmodeltest.CheckSegments(t, out, nicmodeltest.TSOCase{
				V6: v6, MSS: mss, Seq: 1000, ID: 7, Flags: header.TCPFlagAck | header.TCPFlagPsh | header.TCPFlagFin, Payload: payload,
			})
			want := len(out)
			g := r.Regs
			if g.Read32(nicmodel.TSCTC) != 1 || g.Read32(nicmodel.GPTC) != uint32(want) || r.nic.Counters().TxPackets != 1 {
				t.Errorf("TSCTC/GPTC/packets wrong: %+v", r.nic.Counters())
			}
			// The last descriptor reports done.
			d := r.tx[0].ring.Buf[(len(ds)-1)*descLen:]
			if d[12]&TxdStaDD == 0 {
				t.Error("no DD on the RS descriptor")
			}
		})
	}
}

func TestTxBadTSO(t *testing.T) {
	r := newRig(t)
	r.setupTx(0, 16)
	f := tsoPacket(false, make([]byte, 5000))
	tucmd := uint32(TucmdIPv4 | L4TTCP<<TucmdL4TSh)
	// PAYLEN one short, then an MSS of 0, then UDP.
	r.post(0,
		ctxDesc(0, 14, 20, tucmd, 1000, 20, 0),
		dataDesc(r.buf(0, f), len(f), TxdTSE|TxdEOP|TxdRS, OlinfoTXSM|uint32(5000-1)<<OlinfoPayLenSh),
		ctxDesc(0, 14, 20, tucmd, 0, 20, 0),
		dataDesc(r.buf(0, f), len(f), TxdTSE|TxdEOP|TxdRS, OlinfoTXSM|5000<<OlinfoPayLenSh),
		ctxDesc(0, 14, 20, TucmdIPv4|L4TUDP<<TucmdL4TSh, 1000, 8, 0),
		dataDesc(r.buf(0, f), len(f), TxdTSE|TxdEOP|TxdRS, OlinfoTXSM|5000<<OlinfoPayLenSh))
	if out := r.Sent(); len(out) != 0 {
		t.Errorf("%d frames from bad TSO set-ups", len(out))
	}
	if v := r.Regs.Read32(nicmodel.TSCTFC); v != 3 {
		t.Errorf("TSCTFC %d, want 3", v)
	}
	if r.Regs.Read32(TDH) != 6 {
		t.Error("bad descriptors not consumed")
	}
}

func TestTxRingWrapAndHeadWriteBack(t *testing.T) {
	r := newRig(t)
	const size = 8
	r.setupTx(1, size)
	f := udp4(dstIP4, srcIP4, 1, 2, []byte("x"))
	for i := range 30 {
		r.post(1, dataDesc(r.buf(1, f), len(f), TxdEOP|TxdRS|TxdIFCS, uint32(len(f))<<OlinfoPayLenSh))
		if h := r.Regs.Read32(TDH + queueSize); int(h) != (i+1)%size {
			t.Fatalf("packet %d: TDH %d", i, h)
		}
		if r.tx[1].ring.Buf[(i%size)*descLen+12]&TxdStaDD == 0 {
			t.Fatalf("packet %d: no DD", i)
		}
	}
	if out := r.Sent(); len(out) != 30 {
		t.Fatalf("%d frames, want 30", len(out))
	}
	// Head write-back: the head goes to memory instead of DD.
	wb := r.Alloc(4096)
	r.Regs.Write32(TDWBAL+queueSize, uint32(wb.Phys)|TdwbalEnable)
	r.Regs.Write32(TDWBAH+queueSize, uint32(uint64(wb.Phys)>>32))
	clear(r.tx[1].ring.Buf)
	r.post(1,
		dataDesc(r.buf(1, f), len(f), TxdEOP, 0),
		dataDesc(r.buf(1, f), len(f), TxdEOP|TxdRS, 0))
	if got := binary.LittleEndian.Uint32(wb.Buf); got != (30+2)%size {
		t.Errorf("head written back %d, want %d", got, (30+2)%size)
	}
	for i := range size {
		if r.tx[1].ring.Buf[i*descLen+12]&TxdStaDD != 0 {
			t.Errorf("DD written at %d with head write-back on", i)
		}
	}
	// A disabled queue does not transmit.
	r.Regs.Write32(TXDCTL+queueSize, 0)
	r.post(1, dataDesc(r.buf(1, f), len(f), TxdEOP|TxdRS, 0))
	if out := r.Sent(); len(out) != 2 {
		t.Errorf("%d frames, want 2 (queue disabled after them)", len(out))
	}
}

func TestTxVLANPadLinkAndLegacy(t *testing.T) {
	r := newRig(t)
	r.setupTx(0, 16)
	short := make([]byte, 42)
	ethHdr(short, 0x88b5)
	r.post(0,
		ctxDesc(0x6007, 14, 0, 0, 0, 0, 0),
		dataDesc(r.buf(0, short), len(short), TxdEOP|TxdRS|TxdVLE, 0))
	out := r.Sent()
	if len(out) != 1 || len(out[0]) != 60 {
		t.Fatalf("frames %d, length %d: want one padded to 60", len(out), len(out[0]))
	}
	if et := binary.BigEndian.Uint16(out[0][12:]); et != 0x8100 || binary.BigEndian.Uint16(out[0][14:]) != 0x6007 {
		t.Errorf("tag %x", out[0][12:18])
	}
	if !bytes.Equal(out[0][16:16+30], short[12:]) {
		t.Error("payload after the tag differs")
	}
	// Legacy descriptor with checksum insertion at CSO from CSS.
	u := udp4(dstIP4, srcIP4, 1, 2, []byte("legacy"))
	offloadReady(u, false, header.UDPProtocolNumber, 14)
	header.IPv4(u[14:]).SetChecksum(^header.IPv4(u[14:]).CalculateChecksum())
	u = u[:48]
	lo := r.buf(0, u)
	hi := uint64(len(u)) | uint64(34+6)<<16 | uint64(TxdEOP|TxdRS|TxdIC)<<24 | uint64(34)<<40
	r.post(0, txDesc{lo, hi})
	out = r.Sent()
	nicmodeltest.CheckL4(t, out[0], false)
	// Link down: frames are dropped, descriptors still complete.
	r.nic.SetLink(false, 1000)
	r.post(0, dataDesc(r.buf(0, short), len(short), TxdEOP|TxdRS, 0))
	if len(r.Sent()) != 0 || r.nic.Counters().TxNoLink != 1 || r.Regs.Read32(TDH) != 4 {
		t.Errorf("link down: %+v TDH %d", r.nic.Counters(), r.Regs.Read32(TDH))
	}
}

// With DeferTx a TDT write only records the tail: the queue's descriptors
// are processed, TxPerTouch at a time, when the driver next touches the
// queue's transmit registers or arms the vector of its transmit cause,
// and each buffer is read then, not at the doorbell.
func TestDeferTx(t *testing.T) {
	m := newRig(t).M
	if _, err := New(Options{DeferTx: true, TxPerTouch: -1}, m.Port(nicAddr), m.IRQ(nicAddr)); err == nil {
		t.Error("a negative TxPerTouch was accepted")
	}
	r := newRigWith(t, Options{MAC: ourMAC, DeferTx: true, TxPerTouch: 2})
	r.setupTx(0, 16)
	r.setupTx(1, 16)
	r.Regs.Write32(nicmodel.IVAR0, nicmodel.IvarValid|0|(nicmodel.IvarValid|1)<<8) // queue 0: RX vector 0, TX vector 1
	var frames [][]byte
	var addrs []uint64
	packet := func(seed byte) txDesc {
		f := udp4(dstIP4, srcIP4, 1, 2, nicmodeltest.Payload(100, seed))
		frames = append(frames, f)
		addrs = append(addrs, r.buf(0, f))
		return dataDesc(addrs[len(addrs)-1], len(f), TxdEOP|TxdRS, uint32(len(f))<<OlinfoPayLenSh)
	}
	dd := func(i int) bool { return r.tx[0].ring.Buf[i*descLen+12]&TxdStaDD != 0 }
	var wire [][]byte
	onWire := func() int { wire = append(wire, r.Sent()...); return len(wire) }
	r.post(0, packet(0), packet(1), packet(2), packet(3))
	if n := onWire(); n != 0 || dd(0) {
		t.Fatalf("%d frames sent at the doorbell, DD %v", n, dd(0))
	}
	for _, off := range []uint32{nicmodel.STATUS, nicmodel.EICR, nicmodel.ICR, nicmodel.GPTC, TDH + queueSize, RDH} {
		r.Regs.Read32(off)
	}
	r.Regs.Write32(nicmodel.EIMS, 1<<0) // the queue's receive vector
	if n := onWire(); n != 0 {
		t.Fatalf("%d frames sent for registers that are not the queue's transmit path", n)
	}

	if h := r.Regs.Read32(TDH); h != 2 {
		t.Fatalf("TDH %d after one touch, want 2", h)
	}
	if n := onWire(); n != 2 || !dd(1) || dd(2) {
		t.Fatalf("%d frames sent, DD of descriptors 1 and 2 %v %v: want 2, true, false", n, dd(1), dd(2))
	}
	// The driver rewrites a buffer the device has not read: its new bytes
	// go out.
	frames[3] = udp4(dstIP4, srcIP4, 1, 2, nicmodeltest.Payload(100, 0x77))
	copy(r.tx[0].bufs.Buf[addrs[3]-uint64(r.tx[0].bufs.Phys):], frames[3])
	// The next doorbell processes what was handed over before it.
	r.post(0, packet(4))
	if c := r.nic.Counters(); c.TxPackets != 4 {
		t.Fatalf("%d packets taken after the second doorbell, want 4", c.TxPackets)
	}
	// The poll loop's re-arm of the transmit vector takes the last one,
	// and its completion sets the vector's cause.
	r.Regs.Write32(nicmodel.EIMS, 1<<1)
	if c := r.nic.Counters(); c.TxPackets != 5 {
		t.Fatalf("%d packets taken after the re-arm, want 5", c.TxPackets)
	}
	if v := r.Regs.Read32(nicmodel.EICR); v&(1<<1) == 0 {
		t.Errorf("EICR %#x after the re-arm's completion, want vector 1", v)
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
