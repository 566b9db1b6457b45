package m82576

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/ether9/ether9/kernel/sim/nicmodel"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
)

func TestRxChecksumStatus(t *testing.T) {
	r := newRig(t)
	r.setupRx(0, 16, 2048)
	r.Regs.Write32(nicmodel.RXCSUM, nicmodel.RxcsumIPOFL|nicmodel.RxcsumTUOFL|nicmodel.RxcsumPCSD)
	badIP := tcp4(srcIP4, dstIP4, 1, 2, []byte("x"))
	badIP[14+10] ^= 0xff
	badTCP := tcp4(srcIP4, dstIP4, 1, 2, []byte("x"))
	badTCP[len(badTCP)-1-5] ^= 0x01 // the payload byte, before the padding
	badUDP := udp4(srcIP4, dstIP4, 1, 2, []byte("hello"))
	badUDP[14+20+8] ^= 0x40
	noUDPsum := udp4(srcIP4, dstIP4, 1, 2, []byte("hello"))
	noUDPsum[14+20+6], noUDPsum[14+20+7] = 0, 0

	cases := []struct {
		name         string
		f            []byte
		status, errs uint32
		pkt          uint32
	}{
		{"good TCPv4", tcp4(srcIP4, dstIP4, 1, 2, []byte("x")), RxdIPCS | RxdL4I, 0, PktIPv4 | PktTCP},
		{"good UDPv4", udp4(srcIP4, dstIP4, 1, 2, []byte("x")), RxdIPCS | RxdL4I | RxdUDPCS, 0, PktIPv4 | PktUDP},
		{"good TCPv6", tcp6(srcIP6, dstIP6, 1, 2, []byte("x")), RxdL4I, 0, PktIPv6 | PktTCP},
		{"bad IPv4 header", badIP, RxdIPCS | RxdL4I, RxdErrIPE, PktIPv4 | PktTCP},
		{"bad TCP", badTCP, RxdIPCS | RxdL4I, RxdErrL4E, PktIPv4 | PktTCP},
		{"bad UDP", badUDP, RxdIPCS | RxdL4I | RxdUDPCS, RxdErrL4E, PktIPv4 | PktUDP},
		{"UDP without checksum", noUDPsum, RxdIPCS | RxdL4I | RxdUDPCS, 0, PktIPv4 | PktUDP},
	}
	for _, c := range cases {
		r.Inject(c.f)
		got, wb, ok := r.takeRx(0)
		if !ok {
			t.Errorf("%s: not received", c.name)
			continue
		}
		if !bytes.Equal(got, c.f) {
			t.Errorf("%s: data differs", c.name)
		}
		const mask = RxdIPCS | RxdL4I | RxdUDPCS | RxdErrIPE | RxdErrL4E
		if want := c.status | c.errs | RxdDD | RxdEOP; wb.stErr&(mask|RxdDD|RxdEOP) != want {
			t.Errorf("%s: status/errors %#x, want %#x", c.name, wb.stErr, want)
		}
		if wb.info&^0xf != c.pkt {
			t.Errorf("%s: packet type %#x, want %#x", c.name, wb.info&^0xf, c.pkt)
		}
	}
	// With the offloads off nothing is checked.
	r.Regs.Write32(nicmodel.RXCSUM, 0)
	r.Inject(badIP)
	if _, wb, _ := r.takeRx(0); wb.stErr&(RxdIPCS|RxdL4I|RxdErrIPE) != 0 {
		t.Errorf("offloads off: status %#x", wb.stErr)
	}
	// PCSD clear: DW1 is the IP identification and packet checksum.
	r.Regs.Write32(nicmodel.RXCSUM, nicmodel.RxcsumIPOFL)
	f := udp4(srcIP4, dstIP4, 1, 2, []byte("x"))
	r.Inject(f)
	if _, wb, _ := r.takeRx(0); uint16(wb.hash) != 9 {
		t.Errorf("IP id %d, want 9", uint16(wb.hash))
	}
}

// Frames larger than a buffer span descriptors; the ring wraps many
// times; every byte arrives and the head follows.
func TestRxRingWrapAndSpanning(t *testing.T) {
	r := newRig(t)
	const size = 8
	r.setupRx(0, size, 1024)
	for i := range 40 {
		f := udp4(srcIP4, dstIP4, uint16(i), 2, bytes.Repeat([]byte{byte(i)}, 300+i*29))
		r.Inject(f)
		start := r.rx[0].next
		got, wb, ok := r.takeRx(0)
		if !ok {
			t.Fatalf("frame %d not received (counters %+v)", i, r.nic.Counters())
		}
		if !bytes.Equal(got, f) {
			t.Fatalf("frame %d: %d bytes differ from %d sent", i, len(got), len(f))
		}
		used := (r.rx[0].next - start + size) % size
		want := (len(f) + 1023) / 1024
		if used != want {
			t.Fatalf("frame %d of %d bytes used %d descriptors, want %d", i, len(f), used, want)
		}
		if int(wb.length) != len(f)-(want-1)*1024 {
			t.Fatalf("last descriptor length %d", wb.length)
		}
		if h := r.Regs.Read32(RDH); int(h) != r.rx[0].next {
			t.Fatalf("RDH %d, want %d", h, r.rx[0].next)
		}
	}
}

// With SRRCTL.Drop_En a queue out of descriptors drops its frames
// (RNBC, RQDPC) and other queues go on.
func TestRxDropEnable(t *testing.T) {
	r := newRig(t)
	r.setupRx(0, 8, 2048)
	r.setupRx(1, 8, 2048)
	r.Regs.Write32(RDT+queueSize, 3) // three descriptors handed over
	r.Regs.Write32(SRRCTL+queueSize, r.Regs.Read32(SRRCTL+queueSize)|SrrctlDropEn)
	r.Regs.Write32(ETQF0, 0x88b5|EtqfFilter|EtqfQueueEn|1<<EtqfQueueSh)
	l2 := make([]byte, 60)
	ethHdr(l2, 0x88b5)
	for range 5 {
		r.Inject(l2)
		r.Inject(udp4(srcIP4, dstIP4, 1, 2, nil))
	}
	c := r.nic.Counters()
	if c.RxQueue[1] != 3 || c.RxQueue[0] != 5 || c.RxNoDescriptor != 2 || c.RxMissed != 0 {
		t.Errorf("counters %+v", c)
	}
	g := r.Regs
	if v := g.Read32(nicmodel.RNBC); v != 2 {
		t.Errorf("RNBC %d, want 2", v)
	}
	if v := g.Read32(RQDPC + queueSize); v != 2 {
		t.Errorf("RQDPC(1) %d, want 2", v)
	}
	if v := g.Read32(RQDPC + queueSize); v != 0 {
		t.Errorf("RQDPC not cleared on read: %d", v)
	}
	if v := g.Read32(nicmodel.MPC); v != 0 {
		t.Errorf("MPC %d, want 0", v)
	}
}

// Without Drop_En frames wait in the packet buffer, in order and in front
// of every queue's frames, until descriptors come back; a full buffer
// misses frames (MPC); a frame is never cut to fit.
func TestRxPacketBufferHoldsFrames(t *testing.T) {
	r := newRig(t)
	r.setupRx(0, 8, 1024)
	r.setupRx(1, 8, 2048)
	g := r.Regs
	g.Write32(RDT, 3) // three 1 KiB descriptors on queue 0
	g.Write32(ETQF0, 0x88b5|EtqfFilter|EtqfQueueEn|1<<EtqfQueueSh)
	big := func(i byte) []byte { return udp4(srcIP4, dstIP4, uint16(i), 2, bytes.Repeat([]byte{i}, 1400)) }
	r.Inject(big(1)) // two descriptors
	r.Inject(big(2)) // one left: waits
	l2 := make([]byte, 60)
	ethHdr(l2, 0x88b5)
	r.Inject(l2) // queue 1 has room, but waits behind it
	c := r.nic.Counters()
	if c.RxQueue[0] != 1 || c.RxQueue[1] != 0 || c.RxNoDescriptor != 1 || r.nic.pb.Len() != 2 {
		t.Fatalf("counters %+v, %d held", c, r.nic.pb.Len())
	}
	if got, _, ok := r.takeRx(0); !ok || !bytes.Equal(got, big(1)) {
		t.Fatal("first frame wrong")
	}
	// takeRx gave back two descriptors (RDT writes): three free now.
	got, _, ok := r.takeRx(0)
	if !ok || !bytes.Equal(got, big(2)) {
		t.Fatalf("held frame not delivered whole: ok %v, %d bytes", ok, len(got))
	}
	if _, _, ok := r.takeRx(1); !ok {
		t.Error("frame held behind the starved queue not delivered")
	}
	if v := g.Read32(nicmodel.RNBC); v != 1 {
		t.Errorf("RNBC %d, want 1 (counted once while it waited)", v)
	}
	// Starve queue 0 for good and overflow the 64 KiB buffer.
	g.Write32(RDT, uint32(r.rx[0].next))
	for i := range 60 {
		r.Inject(big(byte(i)))
	}
	c = r.nic.Counters()
	if c.RxMissed == 0 || uint64(g.Read32(nicmodel.MPC)) != c.RxMissed || g.Read32(nicmodel.ICR)&IntRXMiss == 0 {
		t.Errorf("overflow: %+v", c)
	}
	if held := r.nic.pb.Len(); held*1446 > 64<<10 || held+int(c.RxMissed) != 60 {
		t.Errorf("%d held + %d missed, want 60 within 64 KiB", held, c.RxMissed)
	}
	// A reset empties the buffer.
	g.Write32(nicmodel.CTRL, nicmodel.CtrlRST)
	if r.nic.pb.Len() != 0 {
		t.Error("reset kept held frames")
	}
}

func TestRxQueueDisabledAndReceiverOff(t *testing.T) {
	r := newRig(t)
	r.setupRx(0, 8, 2048)
	f := udp4(srcIP4, dstIP4, 1, 2, nil)
	r.Regs.Write32(RXDCTL, 0)
	r.Inject(f)
	if c := r.nic.Counters(); c.RxQueueOff != 1 || c.RxFrames != 0 {
		t.Errorf("disabled queue: %+v", c)
	}
	r.Regs.Write32(RXDCTL, RxdctlEnable)
	r.Regs.Write32(nicmodel.RCTL, 0)
	r.Inject(f)
	r.nic.SetLink(false, 1000)
	r.Regs.Write32(nicmodel.RCTL, nicmodel.RctlEN|nicmodel.RctlSECRC)
	r.Inject(f)
	if c := r.nic.Counters(); c.RxOff != 2 || c.RxFrames != 0 {
		t.Errorf("receiver off, link down: %+v", c)
	}
	// Header split is not modelled: such a queue drops, and says so.
	r.nic.SetLink(true, 1000)
	r.Regs.Write32(SRRCTL, 2|2<<SrrctlDescTypeSh)
	r.Inject(f)
	if c := r.nic.Counters(); c.RxBadSetup != 1 {
		t.Errorf("header split queue: %+v", c)
	}
}

func TestRxSizeLimitsAndCRC(t *testing.T) {
	r := newRig(t)
	r.setupRx(0, 16, 16384)
	g := r.Regs
	short := make([]byte, 40)
	ethHdr(short, 0x88b5)
	r.Inject(short)
	jumbo := udp4(srcIP4, dstIP4, 1, 2, make([]byte, 3000))
	r.Inject(jumbo)
	if g.Read32(nicmodel.RUC) != 1 || g.Read32(nicmodel.ROC) != 1 || r.nic.Counters().RxBadSize != 2 {
		t.Errorf("RUC/ROC not counted: %+v", r.nic.Counters())
	}
	g.Write32(nicmodel.RCTL, g.Read32(nicmodel.RCTL)|nicmodel.RctlLPE)
	r.Inject(jumbo)
	if got, _, ok := r.takeRx(0); !ok || len(got) != len(jumbo) {
		t.Errorf("jumbo with LPE: ok %v len %d", ok, len(got))
	}
	g.Write32(RLPML, 2000)
	r.Inject(jumbo)
	if g.Read32(nicmodel.ROC) != 1 {
		t.Error("RLPML not enforced")
	}
	// Without SECRC the FCS is stored after the frame.
	g.Write32(nicmodel.RCTL, g.Read32(nicmodel.RCTL)&^nicmodel.RctlSECRC)
	f := udp4(srcIP4, dstIP4, 1, 2, []byte("fcs"))
	r.Inject(f)
	got, _, _ := r.takeRx(0)
	if len(got) != len(f)+4 || binary.LittleEndian.Uint32(got[len(f):]) != crc32.ChecksumIEEE(f) {
		t.Errorf("FCS not kept: %d bytes", len(got))
	}
}

func TestRxLegacyDescriptors(t *testing.T) {
	r := newRig(t)
	r.setupRx(0, 8, 2048)
	r.Regs.Write32(SRRCTL, 2) // DESCTYPE 0: legacy
	const pcss = 14           // the packet checksum from the IP header on
	r.Regs.Write32(nicmodel.RXCSUM, nicmodel.RxcsumIPOFL|nicmodel.RxcsumTUOFL|pcss)
	f := tcp4(srcIP4, dstIP4, 1, 2, []byte("legacy"))
	f[len(f)-1-3] ^= 1 // corrupt the payload
	r.Inject(f)
	d := r.rx[0].ring.Buf[:descLen]
	le := binary.LittleEndian
	if le.Uint64(d) != uint64(r.rx[0].bufs.Phys) {
		t.Error("legacy write-back lost the buffer address")
	}
	if int(le.Uint16(d[8:])) != len(f) || d[12]&(RxdDD|RxdEOP|RxdIPCS|RxdL4I) != RxdDD|RxdEOP|RxdIPCS|RxdL4I {
		t.Errorf("length %d status %#x", le.Uint16(d[8:]), d[12])
	}
	if d[13] != RxdErrL4E>>legacyErrShift {
		t.Errorf("errors %#x, want TCPE", d[13])
	}
	if got, want := le.Uint16(d[10:]), checksum.Checksum(f[pcss:], 0); got != want {
		t.Errorf("packet checksum %#04x, want %#04x", got, want)
	}
	// With the FCS kept in the buffer the sum still ends with the frame.
	r.Regs.Write32(nicmodel.RCTL, r.Regs.Read32(nicmodel.RCTL)&^nicmodel.RctlSECRC)
	r.Inject(f)
	d = r.rx[0].ring.Buf[descLen : 2*descLen]
	if got, want := le.Uint16(d[10:]), checksum.Checksum(f[pcss:], 0); int(le.Uint16(d[8:])) != len(f)+4 || got != want {
		t.Errorf("FCS kept: length %d, packet checksum %#04x, want %#04x", le.Uint16(d[8:]), got, want)
	}
}

// Receive descriptors are fetched ahead into the queue's cache: a
// descriptor software rewrites after handing it over is not read again,
// until the queue is set up again (RXDCTL written), which drops the cache.
func TestRxDescriptorPrefetch(t *testing.T) {
	r := newRig(t)
	r.setupRx(0, 16, 2048)
	rr := &r.rx[0]
	spare := r.Alloc(2048)
	retarget := func(i int) {
		binary.LittleEndian.PutUint64(rr.ring.Buf[i*descLen:], uint64(spare.Phys))
	}
	f := udp4(srcIP4, dstIP4, 1, 2, []byte("first"))
	r.Inject(f)
	if !bytes.Equal(rr.bufs.Buf[:len(f)], f) {
		t.Fatal("first frame not in buffer 0")
	}
	retarget(1)
	f = udp4(srcIP4, dstIP4, 1, 2, []byte("second"))
	r.Inject(f)
	if !bytes.Equal(rr.bufs.Buf[2048:2048+len(f)], f) || bytes.Equal(spare.Buf[:len(f)], f) {
		t.Fatal("descriptor 1 was read again after it was prefetched")
	}
	retarget(2)
	r.Regs.Write32(RXDCTL, 0)
	r.Regs.Write32(RXDCTL, RxdctlEnable)
	f = udp4(srcIP4, dstIP4, 1, 2, []byte("third"))
	r.Inject(f)
	if !bytes.Equal(spare.Buf[:len(f)], f) {
		t.Fatal("after RXDCTL was written, descriptor 2 came from the stale cache")
	}
	if c := r.nic.Counters(); c.RxFrames != 3 || c.RxDMAFaults != 0 {
		t.Errorf("counters %+v", c)
	}
}
