package m82574

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/ether9/ether9/kernel/sim/nicmodel"
	"github.com/ether9/ether9/kernel/sim/nicmodel/nicmodeltest"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

const rctlBase = nicmodel.RctlBAM | nicmodel.RctlSECRC // 2 KiB buffers, CRC stripped

// extWB decodes an extended write-back.
type extWB struct {
	mrq, hi uint32
	stErr   uint32
	length  uint16
	vlan    uint16
}

func decodeExt(d []byte) extWB {
	le := binary.LittleEndian
	return extWB{le.Uint32(d[0:]), le.Uint32(d[4:]), le.Uint32(d[8:]), le.Uint16(d[12:]), le.Uint16(d[14:])}
}

func (w extWB) has(bits uint32) bool { return w.stErr&bits == bits }

func TestRxExtendedWriteBack(t *testing.T) {
	r := newRig(t, M82574L)
	r.setupRx(rctlBase, true)
	r.Regs.Write32(nicmodel.IMS, nicmodel.IntRXT0)
	before := r.irq.Raised()

	payload := payloadBytes(1000, 4)
	f := tcp4(ourMAC, payload, header.TCPFlagAck, true, 0)
	r.Wire.B().Send(f)
	wb := decodeExt(r.rxDesc(0))
	if !wb.has(RxdDD|RxdEOP|RxdIPCS|RxdTCPCS) || wb.stErr&0xfff00000 != 0 {
		t.Fatalf("status/errors %#x", wb.stErr)
	}
	if int(wb.length) != len(f) || !bytes.Equal(r.rxBuf(0)[:len(f)], f) {
		t.Fatalf("length %d, want %d; or data differs", wb.length, len(f))
	}
	if ipid := uint16(wb.hi); ipid != 0x1234 {
		t.Fatalf("IP id %#x in the write-back", ipid)
	}
	if h := r.Regs.Read32(RDH); h != 1 {
		t.Fatalf("RDH %d, want 1", h)
	}
	if r.irq.Raised() == before || r.Regs.Read32(nicmodel.ICR)&nicmodel.IntRXT0 == 0 {
		t.Fatal("no RXT0 interrupt")
	}

	// Bad checksums are reported, and the frame is still delivered.
	bad := bytes.Clone(f)
	bad[len(bad)-1] ^= 0xff
	r.Wire.B().Send(bad)
	if wb := decodeExt(r.rxDesc(1)); !wb.has(RxdDD|RxdTCPCS|RxdErrTCPE) || wb.has(RxdErrIPE) {
		t.Fatalf("corrupt payload: status/errors %#x, want TCPE only", wb.stErr)
	}
	bad = bytes.Clone(f)
	bad[l3Off+8]-- // TTL: the header checksum no longer matches
	r.Wire.B().Send(bad)
	if wb := decodeExt(r.rxDesc(2)); !wb.has(RxdDD | RxdIPCS | RxdErrIPE) {
		t.Fatalf("corrupt IP header: status/errors %#x, want IPE", wb.stErr)
	}
	u := udp4(ourMAC, payloadBytes(50, 2))
	r.Wire.B().Send(u)
	if wb := decodeExt(r.rxDesc(3)); !wb.has(RxdDD|RxdIPCS|RxdUDPCS) || wb.has(RxdTCPCS) || wb.stErr>>20 != 0 {
		t.Fatalf("UDP: status/errors %#x", wb.stErr)
	}
	if n := r.Regs.Read32(nicmodel.GPRC); n != 4 {
		t.Fatalf("GPRC %d", n)
	}
}

func TestRxChecksumOffloadOff(t *testing.T) {
	r := newRig(t, M82574L)
	r.Regs.Write32(nicmodel.RXCSUM, 0)
	r.setupRx(rctlBase, true)
	r.Wire.B().Send(tcp4(ourMAC, payloadBytes(100, 1), header.TCPFlagAck, true, 0))
	if wb := decodeExt(r.rxDesc(0)); !wb.has(RxdDD|RxdEOP|RxdIXSM) || wb.has(RxdIPCS) || wb.has(RxdTCPCS) {
		t.Fatalf("offloads off: status %#x, want IXSM only", wb.stErr)
	}
}

func TestRxLegacyDescriptors(t *testing.T) {
	r := newRig(t, M82574L)
	r.setupRx(nicmodel.RctlBAM, false) // FCS kept in the buffer
	f := udp4(ourMAC, payloadBytes(200, 8))
	r.Wire.B().Send(f)
	d := r.rxDesc(0)
	if a := binary.LittleEndian.Uint64(d); a != uint64(r.rxBufs.Phys) {
		t.Fatalf("legacy write-back overwrote the buffer address: %#x", a)
	}
	length := binary.LittleEndian.Uint16(d[8:])
	if int(length) != len(f)+nicmodel.FCSLen {
		t.Fatalf("length %d, want %d with FCS", length, len(f)+nicmodel.FCSLen)
	}
	if st, errs := d[12], d[13]; st&(RxdDD|RxdEOP|RxdIPCS|RxdUDPCS) != RxdDD|RxdEOP|RxdIPCS|RxdUDPCS || errs != 0 {
		t.Fatalf("status %#x errors %#x", st, errs)
	}
	buf := r.rxBuf(0)
	if !bytes.Equal(buf[:len(f)], f) || binary.LittleEndian.Uint32(buf[len(f):]) != crc32.ChecksumIEEE(f) {
		t.Fatal("data or FCS differs")
	}
}

func TestRxSpansDescriptors(t *testing.T) {
	r := newRig(t, M82574L)
	r.setupRx(rctlBase|3<<nicmodel.RctlBSIZSh|nicmodel.RctlLPE, true) // 256-byte buffers
	f := udp4(ourMAC, payloadBytes(1000, 6))                          // 1042 bytes: 5 buffers
	r.Wire.B().Send(f)
	var got []byte
	for i := range 5 {
		wb := decodeExt(r.rxDesc(i))
		if !wb.has(RxdDD) || wb.has(RxdEOP) != (i == 4) {
			t.Fatalf("descriptor %d status %#x: EOP on the last only", i, wb.stErr)
		}
		got = append(got, r.rxBuf(i)[:wb.length]...)
	}
	if !bytes.Equal(got, f) {
		t.Fatal("frame spread over buffers differs")
	}
	if h := r.Regs.Read32(RDH); h != 5 {
		t.Fatalf("RDH %d, want 5", h)
	}
}

// A driver loop: take done descriptors, re-arm them and move RDT, around
// the ring several times; then starve the ring and count drops.
func TestRxRingWrapAndDrops(t *testing.T) {
	r := newRig(t, M82574L)
	r.setupRx(rctlBase, true)
	next := 0
	for i := range 5 * ringSize {
		f := udp4(ourMAC, payloadBytes(64+i, byte(i)))
		r.Wire.B().Send(f)
		wb := decodeExt(r.rxDesc(next))
		if !wb.has(RxdDD|RxdEOP) || int(wb.length) != len(f) || !bytes.Equal(r.rxBuf(next)[:len(f)], f) {
			t.Fatalf("frame %d in slot %d: status %#x length %d", i, next, wb.stErr, wb.length)
		}
		r.armRx(next)
		r.Regs.Write32(RDT, uint32(next))
		next = (next + 1) % ringSize
	}
	if c := r.nic.Counters(); c.RxFrames != uint64(5*ringSize) || c.RxNoDescriptor != 0 {
		t.Fatalf("counters %+v", c)
	}
	r.Regs.Read32(nicmodel.ICR)

	// Stop re-arming: ringSize-1 descriptors are free, the rest drop.
	f := udp4(ourMAC, payloadBytes(100, 0))
	for range ringSize + 3 {
		r.Wire.B().Send(f)
	}
	if mpc, rnbc := r.Regs.Read32(nicmodel.MPC), r.Regs.Read32(nicmodel.RNBC); mpc != 4 || rnbc != 4 {
		t.Fatalf("MPC %d RNBC %d, want 4 drops", mpc, rnbc)
	}
	if icr := r.Regs.Read32(nicmodel.ICR); icr&(nicmodel.IntRXO|nicmodel.IntRXDMT0) != nicmodel.IntRXO|nicmodel.IntRXDMT0 {
		t.Fatalf("ICR %#x, want RXO and RXDMT0", icr)
	}
	if h, tl := r.Regs.Read32(RDH), r.Regs.Read32(RDT); h != tl {
		t.Fatalf("RDH %d RDT %d: the head stops at the tail", h, tl)
	}
	// Hand one descriptor back: the next frame lands in it.
	h := int(r.Regs.Read32(RDH))
	r.armRx(h)
	r.Regs.Write32(RDT, uint32(h+1)%uint32(ringSize))
	r.Wire.B().Send(f)
	if wb := decodeExt(r.rxDesc(h)); !wb.has(RxdDD) {
		t.Fatal("frame not received after a descriptor was returned")
	}
}

func TestRxFiltering(t *testing.T) {
	mcast := [6]byte{0x01, 0x00, 0x5e, 0x00, 0x00, 0xfb}
	other := [6]byte{0x02, 0x99, 0x99, 0x99, 0x99, 0x99}
	bcast := [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	extra := [6]byte{0x02, 0x11, 0x22, 0x33, 0x44, 0x55}
	for _, tc := range []struct {
		name   string
		rctl   uint32
		setup  func(r *rig)
		dst    [6]byte
		accept bool
	}{
		{"own unicast", 0, nil, ourMAC, true},
		{"other unicast", 0, nil, other, false},
		{"other unicast promiscuous", nicmodel.RctlUPE, nil, other, true},
		{"broadcast with BAM", nicmodel.RctlBAM, nil, bcast, true},
		{"broadcast without BAM", 0, nil, bcast, false},
		{"multicast not in MTA", 0, nil, mcast, false},
		{"multicast promiscuous", nicmodel.RctlMPE, nil, mcast, true},
		{"multicast in MTA", 0, func(r *rig) { setMTA(r, mcast, 0) }, mcast, true},
		{"multicast in MTA, MO 3", 3 << nicmodel.RctlMOSh, func(r *rig) { setMTA(r, mcast, 3) }, mcast, true},
		{"multicast in MTA under another MO", 1 << nicmodel.RctlMOSh, func(r *rig) { setMTA(r, mcast, 0) }, mcast, false},
		{"second receive address", 0, func(r *rig) { setRAR(r, 3, extra, true) }, extra, true},
		{"receive address not valid", 0, func(r *rig) { setRAR(r, 3, extra, false) }, extra, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, M82574L)
			if tc.setup != nil {
				tc.setup(r)
			}
			r.setupRx(nicmodel.RctlSECRC|tc.rctl, true)
			r.Wire.B().Send(udp4(tc.dst, payloadBytes(40, 0)))
			c := r.nic.Counters()
			if got := c.RxFrames == 1; got != tc.accept {
				t.Fatalf("accepted %v, want %v (counters %+v)", got, tc.accept, c)
			}
			if !tc.accept && c.RxFiltered != 1 {
				t.Fatalf("a filtered frame must be counted: %+v", c)
			}
		})
	}
}

func setMTA(r *rig, a [6]byte, mo uint32) {
	h := nicmodel.MTAHash(a[:], mo)
	off := uint32(nicmodel.MTA + 4*(h>>5))
	r.Regs.Write32(off, r.Regs.Read32(off)|1<<(h&31))
}

func setRAR(r *rig, i uint32, a [6]byte, valid bool) {
	r.Regs.Write32(nicmodel.RAL0+8*i, binary.LittleEndian.Uint32(a[:4]))
	hi := uint32(binary.LittleEndian.Uint16(a[4:]))
	if valid {
		hi |= nicmodel.RahAV
	}
	r.Regs.Write32(nicmodel.RAL0+8*i+4, hi)
}

func TestRxSizeLimits(t *testing.T) {
	r := newRig(t, M82574L)
	r.setupRx(rctlBase, true)
	r.Wire.B().Send(udp4(ourMAC, payloadBytes(1472, 0))) // 1514: the largest
	r.Wire.B().Send(udp4(ourMAC, payloadBytes(1473, 0))) // 1515: oversize
	r.Wire.B().Send(udp4(ourMAC, nil))                   // 42 bytes: a runt
	if n, roc, ruc := r.nic.Counters().RxFrames, r.Regs.Read32(nicmodel.ROC), r.Regs.Read32(nicmodel.RUC); n != 1 || roc != 1 || ruc != 1 {
		t.Fatalf("received %d, ROC %d, RUC %d; want 1, 1, 1", n, roc, ruc)
	}
	r.Regs.Write32(nicmodel.RCTL, rctlBase|nicmodel.RctlEN|nicmodel.RctlLPE) // 2 KiB buffers, jumbo frames allowed
	r.Wire.B().Send(udp4(ourMAC, payloadBytes(3000, 0)))
	if n := r.nic.Counters().RxFrames; n != 2 {
		t.Fatalf("jumbo frame with LPE not received (%d frames)", n)
	}
}

func TestRxVLANStrip(t *testing.T) {
	r := newRig(t, M82574L)
	r.Regs.Write32(nicmodel.CTRL, r.Regs.Read32(nicmodel.CTRL)|nicmodel.CtrlVME)
	r.setupRx(rctlBase, true)
	f := udp4(ourMAC, payloadBytes(80, 3))
	tagged := append(append(bytes.Clone(f[:12]), 0x81, 0x00, 0x00, 0x2a), f[12:]...)
	r.Wire.B().Send(tagged)
	wb := decodeExt(r.rxDesc(0))
	if !wb.has(RxdDD|RxdVP|RxdIPCS|RxdUDPCS) || wb.vlan != 42 || int(wb.length) != len(f) {
		t.Fatalf("status %#x vlan %d length %d", wb.stErr, wb.vlan, wb.length)
	}
	if !bytes.Equal(r.rxBuf(0)[:len(f)], f) {
		t.Fatal("tag not stripped")
	}
	// The VLAN filter drops VIDs not in VFTA.
	r.Regs.Write32(nicmodel.RCTL, r.Regs.Read32(nicmodel.RCTL)|nicmodel.RctlVFE)
	r.Wire.B().Send(tagged)
	if c := r.nic.Counters(); c.RxFiltered != 1 {
		t.Fatalf("VID 42 not in VFTA, counters %+v", c)
	}
	r.Regs.Write32(nicmodel.VFTA+4*(42>>5), 1<<(42&31))
	r.Wire.B().Send(tagged)
	if c := r.nic.Counters(); c.RxFrames != 2 {
		t.Fatalf("VID 42 in VFTA, counters %+v", c)
	}
}

func TestRxRSSHash(t *testing.T) {
	r := newRig(t, M82574L)
	key := nicmodeltest.RSSKey()
	for i := range 10 {
		r.Regs.Write32(nicmodel.RSSRK+uint32(4*i), binary.LittleEndian.Uint32(key[4*i:]))
	}
	r.Regs.Write32(nicmodel.MRQC, MrqcRSSEnable|nicmodel.MrqcTCPIPv4|nicmodel.MrqcIPv4)
	r.Regs.Write32(nicmodel.RXCSUM, nicmodel.RxcsumIPOFL|nicmodel.RxcsumTUOFL|nicmodel.RxcsumPCSD)
	r.setupRx(rctlBase, true)
	// 66.9.149.187:2794 -> 161.142.100.80:1766 hashes to 0x51ccc178.
	f := tcp4(ourMAC, payloadBytes(20, 0), header.TCPFlagAck, true, 0)
	ip := header.IPv4(f[l3Off:])
	copy(ip[12:16], []byte{66, 9, 149, 187})
	copy(ip[16:20], []byte{161, 142, 100, 80})
	binary.BigEndian.PutUint16(f[l4Off4:], 2794)
	binary.BigEndian.PutUint16(f[l4Off4+2:], 1766)
	r.Wire.B().Send(f)
	wb := decodeExt(r.rxDesc(0))
	if wb.hi != 0x51ccc178 || wb.mrq&0xf != rssTCPIPv4 {
		t.Fatalf("RSS hash %#x type %d, want 0x51ccc178 type %d", wb.hi, wb.mrq&0xf, rssTCPIPv4)
	}
}

func TestRxFaultInjection(t *testing.T) {
	r := newRig(t, M82574L)
	r.setupRx(rctlBase, true)
	f := udp4(ourMAC, payloadBytes(100, 1))

	r.nic.InjectRx(RxFault{Frames: 2, Errors: RxdErrCE | RxdErrRXE})
	for range 3 {
		r.Wire.B().Send(f)
	}
	for i, want := range []bool{true, true, false} {
		if wb := decodeExt(r.rxDesc(i)); wb.has(RxdErrCE|RxdErrRXE) != want || !wb.has(RxdDD) {
			t.Fatalf("frame %d: status/errors %#x, errors injected %v", i, wb.stErr, want)
		}
	}

	r.nic.InjectRx(RxFault{Frames: 1, SetLength: true, Length: 0xffff})
	r.Wire.B().Send(f)
	if wb := decodeExt(r.rxDesc(3)); wb.length != 0xffff {
		t.Fatalf("length %d, want the injected 0xffff", wb.length)
	}

	// Out of order: frame A's descriptor completes after frame B's.
	r.nic.InjectRx(RxFault{Frames: 1, OutOfOrder: true})
	r.Wire.B().Send(f)
	if decodeExt(r.rxDesc(4)).has(RxdDD) {
		t.Fatal("held descriptor already done")
	}
	if h := r.Regs.Read32(RDH); h != 5 {
		t.Fatalf("RDH %d: the head moves past a held descriptor", h)
	}
	r.Wire.B().Send(f)
	if !decodeExt(r.rxDesc(4)).has(RxdDD) || !decodeExt(r.rxDesc(5)).has(RxdDD) {
		t.Fatal("held descriptor not completed with the next frame")
	}
	r.nic.InjectRx(RxFault{Frames: 1, OutOfOrder: true})
	r.Wire.B().Send(f)
	r.nic.FlushRx()
	if !decodeExt(r.rxDesc(6)).has(RxdDD) {
		t.Fatal("FlushRx did not complete the held descriptor")
	}

	// A DMA fault: nothing written to the buffer, the descriptor done.
	r.nic.InjectRx(RxFault{Frames: 1, DMAFault: true})
	clear(r.rxBuf(7))
	r.Wire.B().Send(f)
	if !decodeExt(r.rxDesc(7)).has(RxdDD) || r.nic.Counters().RxDMAFaults != 1 || r.rxBuf(7)[0] != 0 {
		t.Fatalf("DMA fault: counters %+v", r.nic.Counters())
	}
}

// The receive path allocates nothing per frame.
func TestRxNoAllocations(t *testing.T) {
	r := newRig(t, M82574L)
	r.setupRx(rctlBase, true)
	f := tcp4(ourMAC, payloadBytes(1460, 1), header.TCPFlagAck, true, 0)
	next := 0
	allocs := testing.AllocsPerRun(200, func() {
		r.Wire.B().Send(f)
		r.armRx(next)
		r.Regs.Write32(RDT, uint32(next))
		next = (next + 1) % ringSize
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per received frame", allocs)
	}
}

// With DeferRx frames wait in the packet buffer until the receive path
// touches the device; too few descriptors keep them waiting (RNBC once),
// a full buffer misses them (MPC).
func TestRxPacketBuffer(t *testing.T) {
	r := newRig(t, M82574L)
	r.nic.pb = nicmodel.NewPacketBuffer[struct{}](4 << 10) // as Options{DeferRx: true, RxBufferKiB: 4}
	r.setupRx(rctlBase, true)
	before := r.irq.Raised()
	f := udp4(ourMAC, payloadBytes(958, 1)) // 1000 bytes
	r.Wire.B().Send(f)
	if decodeExt(r.rxDesc(0)).has(RxdDD) {
		t.Fatal("frame reached the ring before the driver looked")
	}
	if r.irq.Raised() == before {
		t.Fatal("a waiting frame did not wake the driver")
	}
	if icr := r.Regs.Read32(nicmodel.ICR); icr&nicmodel.IntRXT0 == 0 {
		t.Fatalf("ICR %#x: reading it should have moved the frame and latched RXT0", icr)
	}
	if wb := decodeExt(r.rxDesc(0)); !wb.has(RxdDD|RxdEOP) || int(wb.length) != len(f) {
		t.Fatalf("status %#x length %d", wb.stErr, wb.length)
	}

	// Give the device no descriptors: frames wait, then overflow.
	r.Regs.Write32(RDT, r.Regs.Read32(RDH))
	for range 6 {
		r.Wire.B().Send(f)
	}
	r.Regs.Read32(nicmodel.ICR)
	r.Regs.Read32(nicmodel.ICR)
	if rnbc, mpc := r.Regs.Read32(nicmodel.RNBC), r.Regs.Read32(nicmodel.MPC); rnbc != 1 || mpc != 2 {
		t.Fatalf("RNBC %d MPC %d, want 1 (the starved head) and 2 (4 KiB hold 4 frames)", rnbc, mpc)
	}
	// Returning descriptors lets the four waiting frames in, in order.
	h := int(r.Regs.Read32(RDH))
	for i := range 4 {
		r.armRx((h + i) % ringSize)
	}
	r.Regs.Write32(RDT, uint32(h+4)%ringSize)
	for i := range 4 {
		if !decodeExt(r.rxDesc((h + i) % ringSize)).has(RxdDD) {
			t.Fatalf("waiting frame %d not written after RDT moved", i)
		}
	}
	if c := r.nic.Counters(); c.RxFrames != 5 || c.RxNoDescriptor != 2 {
		t.Fatalf("counters %+v", c)
	}
}

// Descriptors are fetched several at a time; a ring set-up drops what was
// fetched under the old one.
func TestRxDescriptorPrefetch(t *testing.T) {
	r := newRig(t, M82574L)
	r.setupRx(rctlBase, true)
	f := udp4(ourMAC, payloadBytes(100, 1))
	before := r.M.DMAStats()
	for range rxPrefetchLen {
		r.Wire.B().Send(f)
	}
	st := r.M.DMAStats()
	if reads := st.Reads - before.Reads; reads != 1 {
		t.Fatalf("%d DMA reads for %d frames, want one descriptor fetch", reads, rxPrefetchLen)
	}
	if writes := st.Writes - before.Writes; writes != 2*rxPrefetchLen {
		t.Fatalf("%d DMA writes, want data and write-back per frame", writes)
	}

	// Prefetched descriptors keep the addresses they had when fetched
	// (slot 8 now sits in the cache): as on hardware, rewriting a handed
	// over descriptor is not seen...
	r.Wire.B().Send(f) // slot 8 fetched with slots 9..14
	binary.LittleEndian.PutUint64(r.rxDesc(9), uint64(r.rxBufs.Phys)+uint64(12*r.bufSize))
	r.Wire.B().Send(f)
	if !bytes.Equal(r.rxBuf(9)[:len(f)], f) {
		t.Fatal("the prefetched descriptor was not the one used")
	}
	// ...but setting the ring up again is.
	r.Regs.Write32(RDH, 10)
	binary.LittleEndian.PutUint64(r.rxDesc(10), uint64(r.rxBufs.Phys)+uint64(13*r.bufSize))
	r.Wire.B().Send(f)
	if !bytes.Equal(r.rxBuf(13)[:len(f)], f) {
		t.Fatal("a descriptor fetched before RDH was written was used")
	}
}
