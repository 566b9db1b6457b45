package mi225

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/ether9/ether9/kernel/sim/nicmodel"
	"github.com/ether9/ether9/kernel/sim/nicmodel/nicmodeltest"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

const rctlStd = nicmodel.RctlSECRC | nicmodel.RctlBAM

func TestRxChecksumsAndPacketType(t *testing.T) {
	corrupt := func(f []byte) []byte { f[len(f)-1] ^= 0xff; return f }
	badIP := func(f []byte) []byte { f[header.EthernetMinimumSize+10] ^= 0x55; return f }
	for _, c := range []struct {
		name   string
		frame  []byte
		ptype  uint32
		status uint32
		errs   uint32
	}{
		{"udp4", udpFrame(false, ourMAC, payloadBytes(300, 1), true), PtypeIPv4 | PtypeUDP, RxdStaIPCS | RxdStaL4I | RxdStaUDPCS, 0},
		{"tcp4", tcpFrame(false, ourMAC, payloadBytes(500, 2), header.TCPFlagAck, true, 0), PtypeIPv4 | PtypeTCP, RxdStaIPCS | RxdStaL4I, 0},
		{"udp6", udpFrame(true, ourMAC, payloadBytes(64, 3), true), PtypeIPv6 | PtypeUDP, RxdStaL4I | RxdStaUDPCS, 0},
		{"tcp6", tcpFrame(true, ourMAC, payloadBytes(900, 4), header.TCPFlagAck, true, 0), PtypeIPv6 | PtypeTCP, RxdStaL4I, 0},
		{"tcp4 bad L4", corrupt(tcpFrame(false, ourMAC, payloadBytes(500, 2), header.TCPFlagAck, true, 0)), PtypeIPv4 | PtypeTCP, RxdStaIPCS | RxdStaL4I, RxdErrL4E},
		{"udp6 bad L4", corrupt(udpFrame(true, ourMAC, payloadBytes(64, 3), true)), PtypeIPv6 | PtypeUDP, RxdStaL4I | RxdStaUDPCS, RxdErrL4E},
		{"tcp4 bad IP", badIP(tcpFrame(false, ourMAC, payloadBytes(40, 2), header.TCPFlagAck, true, 0)), PtypeIPv4 | PtypeTCP, RxdStaIPCS | RxdStaL4I, RxdErrIPE},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, 0x15f3)
			r.setupRx(0, 8, 2048, SrrctlDescAdvOne, rctlStd)
			r.Wire.B().Send(c.frame)
			wb := r.rxDesc(0, 0)
			if wb.status&(RxdStaDD|RxdStaEOP) != RxdStaDD|RxdStaEOP {
				t.Fatalf("status %#x, want DD and EOP", wb.status)
			}
			if wb.len() != len(c.frame) {
				t.Fatalf("length %d, want %d", wb.len(), len(c.frame))
			}
			if got := r.rxBuf(0, 0, len(c.frame)); !bytes.Equal(got, c.frame) {
				t.Fatal("buffer does not hold the frame")
			}
			if wb.ptype() != c.ptype {
				t.Fatalf("packet type %#x, want %#x", wb.ptype(), c.ptype)
			}
			st := wb.status &^ (RxdStaDD | RxdStaEOP)
			if st&0xfffff != c.status || st&0xfff00000 != c.errs {
				t.Fatalf("status %#x errors %#x, want %#x %#x", st&0xfffff, st&0xfff00000, c.status, c.errs)
			}
			if wb.dw0&RxdSPH != 0 || wb.hdrLen() != 0 {
				t.Fatalf("one-buffer mode reported a split header: %#x", wb.dw0)
			}
			if h := r.Regs.Read32(RDH); h != 1 {
				t.Fatalf("RDH %d, want 1", h)
			}
		})
	}
}

func TestRxChecksumOffloadOff(t *testing.T) {
	r := newRig(t, 0x15f3)
	r.Regs.Write32(nicmodel.RXCSUM, 0)
	r.setupRx(0, 8, 2048, SrrctlDescAdvOne, rctlStd)
	f := tcpFrame(false, ourMAC, payloadBytes(100, 1), header.TCPFlagAck, true, 0)
	f[len(f)-1] ^= 1
	r.Wire.B().Send(f)
	wb := r.rxDesc(0, 0)
	if wb.status&(RxdStaIPCS|RxdStaL4I|RxdErrL4E) != 0 {
		t.Fatalf("status %#x with RXCSUM off", wb.status)
	}
	ipPayload := header.IPv4(f[macLen:]).Payload()
	if want := uint32(0x1234) | uint32(checksum.Checksum(ipPayload, 0))<<16; wb.dw1 != want {
		t.Fatalf("dword 1 %#x, want %#x: IP identification and payload sum without PCSD", wb.dw1, want)
	}
}

func TestRxMultiBufferFrame(t *testing.T) {
	r := newRig(t, 0x15f3)
	r.Regs.Write32(RLPML, 9018)
	r.setupRx(0, 8, 1024, SrrctlDescAdvOne, rctlStd|nicmodel.RctlLPE)
	f := udpFrame(false, ourMAC, payloadBytes(2600, 9), true)
	r.Wire.B().Send(f)
	want := []int{1024, 1024, len(f) - 2048}
	var got []byte
	for i, l := range want {
		wb := r.rxDesc(0, i)
		if wb.status&RxdStaDD == 0 || wb.len() != l {
			t.Fatalf("descriptor %d: status %#x length %d, want DD and %d", i, wb.status, wb.len(), l)
		}
		if eop := wb.status&RxdStaEOP != 0; eop != (i == len(want)-1) {
			t.Fatalf("descriptor %d: EOP %v", i, eop)
		}
		got = append(got, r.rxBuf(0, i, l)...)
	}
	if !bytes.Equal(got, f) {
		t.Fatal("the buffers do not hold the frame")
	}
	if last := r.rxDesc(0, 2); last.status&(RxdStaL4I|RxdStaUDPCS|RxdStaIPCS) != RxdStaL4I|RxdStaUDPCS|RxdStaIPCS || last.status&RxdErrL4E != 0 {
		t.Fatalf("last descriptor status %#x, want checksums verified", last.status)
	}
	if h := r.Regs.Read32(RDH); h != 3 {
		t.Fatalf("RDH %d, want 3", h)
	}
	if c := r.nic.Counters(); c.RxFrames != 1 || c.RxDescriptors != 3 {
		t.Fatalf("counters %+v", c)
	}
	// A frame needing more descriptors than are free is dropped whole.
	r.Regs.Write32(RDT, 4) // one free descriptor (3)
	r.Wire.B().Send(f)
	if h := r.Regs.Read32(RDH); h != 3 {
		t.Fatalf("RDH %d after a drop, want 3", h)
	}
	if r.rxDesc(0, 3).status&RxdStaDD != 0 {
		t.Fatal("a dropped frame wrote a descriptor")
	}
	if v := r.Regs.Read32(nicmodel.RNBC); v != 1 {
		t.Fatalf("RNBC %d, want 1", v)
	}
}

func TestRxSizeLimits(t *testing.T) {
	r := newRig(t, 0x15f3)
	r.setupRx(0, 8, 2048, SrrctlDescAdvOne, rctlStd)
	r.Wire.B().Send(udpFrame(false, ourMAC, payloadBytes(1472, 1), true)) // 1514 + FCS: fits
	r.Wire.B().Send(udpFrame(false, ourMAC, payloadBytes(1473, 1), true)) // 1519: too long without LPE
	short := ethernet(ourMAC, peerMAC, 0x88b5, 40)[:header.EthernetMinimumSize+30]
	r.Wire.B().Send(short)
	if v := r.Regs.Read32(nicmodel.GPRC); v != 1 {
		t.Fatalf("GPRC %d, want 1", v)
	}
	if v := r.Regs.Read32(nicmodel.ROC); v != 1 {
		t.Fatalf("ROC %d, want 1", v)
	}
	if v := r.Regs.Read32(nicmodel.RUC); v != 1 {
		t.Fatalf("RUC %d, want 1", v)
	}
	// RLPML bounds long frames with LPE.
	r.Regs.Write32(RLPML, 1600)
	r.Regs.Write32(nicmodel.RCTL, rctlStd|nicmodel.RctlEN|nicmodel.RctlLPE)
	r.Wire.B().Send(udpFrame(false, ourMAC, payloadBytes(1554, 1), true)) // 1596 + 4
	r.Wire.B().Send(udpFrame(false, ourMAC, payloadBytes(1555, 1), true)) // 1601
	if v := r.Regs.Read32(nicmodel.GPRC); v != 1 {
		t.Fatalf("GPRC %d at RLPML, want 1", v)
	}
	if v := r.Regs.Read32(nicmodel.ROC); v != 1 {
		t.Fatalf("ROC %d past RLPML, want 1", v)
	}
}

func TestRxDropsWithoutDescriptors(t *testing.T) {
	for _, dropEn := range []bool{false, true} {
		r := newRig(t, 0x15f3)
		srr := uint32(SrrctlDescAdvOne)
		if dropEn {
			srr |= SrrctlDropEn
		}
		r.setupRx(0, 8, 2048, srr, rctlStd)
		f := udpFrame(false, ourMAC, payloadBytes(64, 1), true)
		for range 9 {
			r.Wire.B().Send(f)
		}
		// Seven descriptors were free (RDT = size-1).
		if v := r.Regs.Read32(nicmodel.GPRC); v != 7 {
			t.Fatalf("drop_en %v: GPRC %d, want 7", dropEn, v)
		}
		if v := r.Regs.Read32(nicmodel.RNBC); v != 2 {
			t.Fatalf("drop_en %v: RNBC %d, want 2", dropEn, v)
		}
		mpc, rqdpc := r.Regs.Read32(nicmodel.MPC), r.Regs.Read32(RQDPC)
		if dropEn && (rqdpc != 2 || mpc != 0) || !dropEn && (mpc != 2 || rqdpc != 0) {
			t.Fatalf("drop_en %v: MPC %d RQDPC %d", dropEn, mpc, rqdpc)
		}
		if dropEn {
			if v := r.Regs.Read32(RQDPC); v != 2 {
				t.Fatal("RQDPC cleared by a read")
			}
			r.Regs.Write32(RQDPC, 0)
			if v := r.Regs.Read32(RQDPC); v != 0 {
				t.Fatal("RQDPC not cleared by writing 0")
			}
		}
		if c := r.nic.Counters(); c.RxNoDescriptor != 2 {
			t.Fatalf("counters %+v", c)
		}
	}
}

func TestRxRingWraps(t *testing.T) {
	const size = 8
	r := newRig(t, 0x15f3)
	r.setupRx(0, size, 2048, SrrctlDescAdvOne, rctlStd)
	next := 0
	for i := range 3*size + 3 {
		f := udpFrame(false, ourMAC, payloadBytes(60+i, byte(i)), true)
		r.Wire.B().Send(f)
		wb := r.rxDesc(0, next)
		if wb.status&RxdStaDD == 0 || wb.len() != len(f) || !bytes.Equal(r.rxBuf(0, next, len(f)), f) {
			t.Fatalf("frame %d in slot %d: status %#x length %d", i, next, wb.status, wb.len())
		}
		// The driver takes it and gives the slot back.
		r.armRx(0, next)
		r.Regs.Write32(RDT, uint32(next))
		next = (next + 1) % size
		if h := r.Regs.Read32(RDH); h != uint32(next) {
			t.Fatalf("RDH %d, want %d", h, next)
		}
	}
	if c := r.nic.Counters(); c.RxNoDescriptor != 0 || c.RxFrames != 3*size+3 {
		t.Fatalf("counters %+v", c)
	}
}

func TestRxHeaderSplit(t *testing.T) {
	udp := udpFrame(false, ourMAC, payloadBytes(700, 5), true)                       // header 42
	tcp6 := tcpFrame(true, ourMAC, payloadBytes(100, 6), header.TCPFlagAck, true, 0) // header 74
	small := udpFrame(false, ourMAC, payloadBytes(18, 7), true)                      // 60 bytes in all
	arp := ethernet(ourMAC, peerMAC, header.ARPProtocolNumber, 100)[:header.EthernetMinimumSize+100]
	for _, c := range []struct {
		name     string
		desctype uint32
		hdrSize  int // BSIZEHEADER in bytes
		frame    []byte
		toHdr    int // bytes in the header buffer
		hdrLen   int
		sph, hbo bool
	}{
		{"split", SrrctlDescHdrSplit, 256, udp, 42, 42, true, false},
		{"split, header too big", SrrctlDescHdrSplit, 64, tcp6, 0, 74, true, true},
		{"split, not recognised", SrrctlDescHdrSplit, 256, arp, 0, 0, false, false},
		{"always", SrrctlDescHdrAlways, 256, udp, 42, 42, true, false},
		{"always, header too big", SrrctlDescHdrAlways, 64, tcp6, 64, 74, true, true},
		{"always, not recognised", SrrctlDescHdrAlways, 64, arp, 64, 64, false, false},
		{"always, small frame", SrrctlDescHdrAlways, 64, small, 60, 60, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, 0x15f3)
			r.setupRx(0, 8, 2048, c.desctype, rctlStd)
			r.Regs.Write32(SRRCTL, 2|uint32(c.hdrSize/64)<<SrrctlBSizeHdrShift|c.desctype)
			f := c.frame
			r.Wire.B().Send(f)
			wb := r.rxDesc(0, 0)
			if wb.status&(RxdStaDD|RxdStaEOP) != RxdStaDD|RxdStaEOP {
				t.Fatalf("status %#x", wb.status)
			}
			if sph := wb.dw0&RxdSPH != 0; sph != c.sph || wb.hdrLen() != c.hdrLen {
				t.Fatalf("SPH %v HDR_LEN %d, want %v %d", sph, wb.hdrLen(), c.sph, c.hdrLen)
			}
			if hbo := wb.status&RxdErrHBO != 0; hbo != c.hbo {
				t.Fatalf("HBO %v, want %v", hbo, c.hbo)
			}
			if wb.len() != len(f)-c.toHdr {
				t.Fatalf("PKT_LEN %d, want %d", wb.len(), len(f)-c.toHdr)
			}
			if !bytes.Equal(r.rx[0].hdrs.Buf[:c.toHdr], f[:c.toHdr]) || !bytes.Equal(r.rxBuf(0, 0, len(f)-c.toHdr), f[c.toHdr:]) {
				t.Fatal("header and packet buffers do not hold the frame as the descriptor says")
			}
		})
	}
}

func TestRxAddressFilters(t *testing.T) {
	r := newRig(t, 0x15f3)
	r.setupRx(0, 16, 2048, SrrctlDescAdvOne, nicmodel.RctlSECRC)
	other := [6]byte{0x02, 0, 0, 0, 0, 9}
	bcast := [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	mcast := [6]byte{0x01, 0x00, 0x5e, 0x00, 0x00, 0xfb}
	send := func(dst [6]byte) { r.Wire.B().Send(udpFrame(false, dst, payloadBytes(30, 1), true)) }
	got := func() uint32 { return r.Regs.Read32(nicmodel.GPRC) }

	send(other)
	send(bcast)
	send(mcast)
	if v := got(); v != 0 {
		t.Fatalf("%d frames passed a filter that takes only our address", v)
	}
	send(ourMAC)
	if v := got(); v != 1 {
		t.Fatalf("own address: %d frames", v)
	}
	r.Regs.Write32(nicmodel.RCTL, nicmodel.RctlSECRC|nicmodel.RctlEN|nicmodel.RctlBAM)
	send(bcast)
	if v, b := got(), r.Regs.Read32(nicmodel.BPRC); v != 1 || b != 1 {
		t.Fatalf("broadcast with BAM: GPRC %d BPRC %d", v, b)
	}
	// The multicast table, hashed on bits 47:36 (MO 00).
	h := uint32(mcast[4])>>4 | uint32(mcast[5])<<4
	r.Regs.Write32(nicmodel.MTA+4*(h>>5), 1<<(h&31))
	send(mcast)
	if v, m := got(), r.Regs.Read32(nicmodel.MPRC); v != 1 || m != 1 {
		t.Fatalf("multicast in MTA: GPRC %d MPRC %d", v, m)
	}
	// A second exact address.
	r.Regs.Write32(nicmodel.RAL0+8, binary.LittleEndian.Uint32(other[:4]))
	r.Regs.Write32(nicmodel.RAH0+8, uint32(binary.LittleEndian.Uint16(other[4:]))|nicmodel.RahAV)
	send(other)
	if v := got(); v != 1 {
		t.Fatalf("second RAR: %d frames", v)
	}
	r.Regs.Write32(nicmodel.RCTL, nicmodel.RctlSECRC|nicmodel.RctlEN|nicmodel.RctlUPE)
	send([6]byte{0x02, 1, 2, 3, 4, 5})
	if v := got(); v != 1 {
		t.Fatalf("promiscuous: %d frames", v)
	}
	if c := r.nic.Counters(); c.RxFiltered != 3 {
		t.Fatalf("filtered %d, want 3", c.RxFiltered)
	}
}

func TestRxKeepsFCSWithoutSECRC(t *testing.T) {
	r := newRig(t, 0x15f3)
	r.setupRx(0, 8, 2048, SrrctlDescAdvOne, nicmodel.RctlBAM)
	f := udpFrame(false, ourMAC, payloadBytes(100, 1), true)
	r.Wire.B().Send(f)
	wb := r.rxDesc(0, 0)
	if wb.len() != len(f)+fcsLen {
		t.Fatalf("length %d, want %d with the FCS", wb.len(), len(f)+fcsLen)
	}
	if fcs := binary.LittleEndian.Uint32(r.rxBuf(0, 0, len(f)+4)[len(f):]); fcs != crc32.ChecksumIEEE(f) {
		t.Fatalf("FCS %#x, want %#x", fcs, crc32.ChecksumIEEE(f))
	}
}

func TestRxVLANStripAndFilter(t *testing.T) {
	r := newRig(t, 0x15f3)
	r.Regs.Write32(nicmodel.CTRL, r.Regs.Read32(nicmodel.CTRL)|nicmodel.CtrlVME)
	r.setupRx(0, 8, 2048, SrrctlDescAdvOne, rctlStd|nicmodel.RctlVFE)
	plain := udpFrame(false, ourMAC, payloadBytes(100, 1), true)
	tagged := append(append(append([]byte{}, plain[:12]...), 0x81, 0x00, 0x20, 0x05), plain[12:]...)
	r.Wire.B().Send(tagged)
	if v := r.Regs.Read32(nicmodel.GPRC); v != 0 {
		t.Fatal("VLAN 5 passed an empty VLAN filter")
	}
	r.Regs.Write32(nicmodel.VFTA, 1<<5)
	r.Wire.B().Send(tagged)
	wb := r.rxDesc(0, 0)
	if wb.status&RxdStaVP == 0 || wb.vlan() != 0x2005 || wb.len() != len(plain) {
		t.Fatalf("status %#x vlan %#x length %d, want VP, 0x2005, %d", wb.status, wb.vlan(), wb.len(), len(plain))
	}
	if !bytes.Equal(r.rxBuf(0, 0, len(plain)), plain) {
		t.Fatal("tag not stripped from the stored frame")
	}
	if wb.status&(RxdStaUDPCS|RxdErrL4E) != RxdStaUDPCS {
		t.Fatalf("status %#x: checksum of a tagged frame", wb.status)
	}
}

// The RSS hash of the datasheet's (and Microsoft's) verification example:
// 66.9.149.187:2794 -> 161.142.100.80:1766.
func TestRxRSSHashAndQueue(t *testing.T) {
	key := nicmodeltest.RSSKey()
	r := newRig(t, 0x15f3)
	for i := range 10 {
		r.Regs.Write32(nicmodel.RSSRK+4*uint32(i), binary.LittleEndian.Uint32(key[4*i:]))
	}
	// Entry i of the table names queue i%4.
	for i := range 32 {
		r.Regs.Write32(nicmodel.RETA+4*uint32(i), 0x03020100)
	}
	r.Regs.Write32(nicmodel.MRQC, MrqcEnableRSS|nicmodel.MrqcTCPIPv4|nicmodel.MrqcIPv4)
	r.Regs.Write32(nicmodel.RXCSUM, nicmodel.RxcsumIPOFL|nicmodel.RxcsumTUOFL|nicmodel.RxcsumPCSD)
	for q := range Queues {
		r.setupRx(q, 8, 2048, SrrctlDescAdvOne, rctlStd)
	}
	src := tcpip.AddrFrom4([4]byte{66, 9, 149, 187})
	dst := tcpip.AddrFrom4([4]byte{161, 142, 100, 80})
	f := ethernet(ourMAC, peerMAC, header.IPv4ProtocolNumber, 46)[:header.EthernetMinimumSize+46] // padded to 60
	ip := header.IPv4(f[header.EthernetMinimumSize:])
	ip.Encode(&header.IPv4Fields{TotalLength: 40, TTL: 64, Protocol: uint8(header.TCPProtocolNumber), SrcAddr: src, DstAddr: dst})
	ip.SetChecksum(^ip.CalculateChecksum())
	header.TCP(ip[20:]).Encode(&header.TCPFields{SrcPort: 2794, DstPort: 1766, DataOffset: 20, Flags: header.TCPFlagAck})
	const want = 0x51ccc178
	r.Wire.B().Send(f)
	q := int(want & 0x7f % 4)
	wb := r.rxDesc(q, 0)
	if wb.status&RxdStaDD == 0 {
		t.Fatalf("frame not on queue %d (RDH %d %d %d %d)", q,
			r.Regs.Read32(RxQ(RDH, 0)), r.Regs.Read32(RxQ(RDH, 1)), r.Regs.Read32(RxQ(RDH, 2)), r.Regs.Read32(RxQ(RDH, 3)))
	}
	if wb.dw1 != want || wb.rssType() != RSSTCPIPv4 {
		t.Fatalf("hash %#x type %d, want %#x TCP/IPv4", wb.dw1, wb.rssType(), want)
	}
	// Addresses only.
	r.Regs.Write32(nicmodel.MRQC, MrqcEnableRSS|nicmodel.MrqcIPv4)
	r.Wire.B().Send(f)
	const want2 = 0x323e8fc2
	q2 := int(want2 & 0x7f % 4)
	idx := 0
	if q2 == q {
		idx = 1
	}
	wb = r.rxDesc(q2, idx)
	if wb.dw1 != want2 || wb.rssType() != RSSIPv4 {
		t.Fatalf("hash %#x type %d, want %#x IPv4", wb.dw1, wb.rssType(), want2)
	}
}

func TestDMARefusedWithoutBusMaster(t *testing.T) {
	r := newRig(t, 0x15f3)
	r.setupRx(0, 8, 2048, SrrctlDescAdvOne, rctlStd)
	r.setupTx(0, 8)
	if err := r.M.Bus.WriteConfig(nicAddr, 4, 2, 0x2); err != nil { // memory on, bus master off
		t.Fatal(err)
	}
	r.Wire.B().Send(udpFrame(false, ourMAC, payloadBytes(64, 1), true))
	r.send(0, udpFrame(false, peerMAC, payloadBytes(64, 1), true), nil, 0, 0)
	r.kickTx(0)
	c := r.nic.Counters()
	if c.RxDMAFaults == 0 || c.TxDMAFaults == 0 || c.RxFrames != 0 || c.TxFrames != 0 {
		t.Fatalf("counters %+v, want refused DMA both ways and nothing moved", c)
	}
	if h, th := r.Regs.Read32(RDH), r.Regs.Read32(TDH); h != 0 || th != 0 {
		t.Fatalf("RDH %d TDH %d moved without DMA", h, th)
	}
	if r.rxDesc(0, 0).status&RxdStaDD != 0 {
		t.Fatal("descriptor written without bus mastering")
	}
	// Bus mastering back on: the stalled transmit queue resumes at the
	// next tail write.
	if err := r.M.Bus.WriteConfig(nicAddr, 4, 2, 0x6); err != nil {
		t.Fatal(err)
	}
	r.kickTx(0)
	if out := r.sent(); len(out) != 1 {
		t.Fatalf("sent %d after bus master came back", len(out))
	}
}
