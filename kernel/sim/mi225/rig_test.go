package mi225

import (
	"bytes"
	"encoding/binary"
	"sync"
	"testing"

	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/vtd"
	"github.com/ether9/ether9/kernel/sim/wire"
	"github.com/ether9/ether9/pci"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

var (
	nicAddr = pci.Addr{Dev: 3}
	ourMAC  = [6]byte{0x02, 0x00, 0x00, 0x22, 0x50, 0x01}
	peerMAC = [6]byte{0x02, 0x00, 0x00, 0x22, 0x50, 0x02}
	srcIP4  = tcpip.AddrFrom4([4]byte{10, 0, 0, 1})
	dstIP4  = tcpip.AddrFrom4([4]byte{10, 0, 0, 2})
	srcIP6  = tcpip.AddrFrom16([16]byte{0xfd, 15: 1})
	dstIP6  = tcpip.AddrFrom16([16]byte{0xfd, 15: 2})
)

// rig is a machine with one model on its bus, a wire whose far end the
// test holds, and a small hand-written driver: rings in coherent memory,
// registers through the bus. VT-d is left off, so DMA addresses are
// physical.
type rig struct {
	t    testing.TB
	m    *sim.Machine
	nic  *NIC
	regs kernel.Regs
	w    *wire.Wire

	mu  sync.Mutex
	out [][]byte // frames the model sent

	rx [Queues]rxRig
	tx [Queues]txRig
}

type rxRig struct {
	ring, bufs, hdrs kernel.Region
	size, bufSize    int
}

type txRig struct {
	ring, bufs kernel.Region
	size, tail int
}

const txSlot = 64 << 10

func newRig(t testing.TB, dev uint16) *rig {
	t.Helper()
	m, err := sim.New(sim.Config{VTd: vtd.QEMU()})
	if err != nil {
		t.Fatal(err)
	}
	n, err := Plug(m, nicAddr, Options{Device: dev, MAC: ourMAC})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Bus.WriteConfig(nicAddr, 4, 2, sim.CmdMemory|sim.CmdBusMaster); err != nil {
		t.Fatal(err)
	}
	regs, err := m.Bus.Regs(nicAddr, 0)
	if err != nil {
		t.Fatal(err)
	}
	w, err := wire.New(wire.Options{SpeedMbps: 2500})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, m: m, nic: n, regs: regs, w: w}
	w.B().Receive(func(f []byte) {
		r.mu.Lock()
		r.out = append(r.out, bytes.Clone(f))
		r.mu.Unlock()
	})
	n.Attach(w.A())
	return r
}

func (r *rig) alloc(size int) kernel.Region {
	reg, err := r.m.Mem.Alloc(size, kernel.PageSize)
	if err != nil {
		r.t.Fatal(err)
	}
	return reg
}

func (r *rig) sent() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.out
	r.out = nil
	return out
}

// setupRx builds queue q's ring of size descriptors with packet buffers of
// bufSize bytes (a multiple of 1 KiB) and 256-byte header buffers, hands
// all but one to the device, and enables the queue and the receiver.
func (r *rig) setupRx(q, size, bufSize int, srrctl uint32, rctl uint32) {
	x := &r.rx[q]
	x.size, x.bufSize = size, bufSize
	x.ring = r.alloc(size * descLen)
	x.bufs = r.alloc(size * bufSize)
	x.hdrs = r.alloc(size * 256)
	for i := range size {
		r.armRx(q, i)
	}
	r.regs.Write32(RxQ(RDBAL, q), uint32(x.ring.Phys))
	r.regs.Write32(RxQ(RDBAH, q), uint32(uint64(x.ring.Phys)>>32))
	r.regs.Write32(RxQ(RDLEN, q), uint32(size*descLen))
	r.regs.Write32(RxQ(SRRCTL, q), uint32(bufSize>>10)|4<<SrrctlBSizeHdrShift|srrctl)
	r.regs.Write32(RxQ(RDH, q), 0)
	r.regs.Write32(RxQ(RXDCTL, q), DctlEnable)
	r.regs.Write32(RxQ(RDT, q), uint32(size-1))
	r.regs.Write32(RCTL, rctl|RctlEN)
}

func (r *rig) armRx(q, i int) {
	x := &r.rx[q]
	d := x.ring.Buf[i*descLen : (i+1)*descLen]
	binary.LittleEndian.PutUint64(d[0:], uint64(x.bufs.Phys)+uint64(i*x.bufSize))
	binary.LittleEndian.PutUint64(d[8:], uint64(x.hdrs.Phys)+uint64(i*256))
}

func (r *rig) rxDesc(q, i int) rxWB {
	d := r.rx[q].ring.Buf[i*descLen : (i+1)*descLen]
	le := binary.LittleEndian
	return rxWB{le.Uint32(d[0:]), le.Uint32(d[4:]), le.Uint32(d[8:]), le.Uint32(d[12:])}
}

func (r *rig) rxBuf(q, i, n int) []byte {
	x := &r.rx[q]
	return x.bufs.Buf[i*x.bufSize : i*x.bufSize+n]
}

// rxWB is a decoded receive write-back.
type rxWB struct{ dw0, dw1, status, dw3 uint32 }

func (w rxWB) len() int        { return int(w.dw3 & 0xffff) }
func (w rxWB) vlan() uint16    { return uint16(w.dw3 >> 16) }
func (w rxWB) ptype() uint32   { return w.dw0 >> RxdPtypeShift & 0x1fff }
func (w rxWB) rssType() uint32 { return w.dw0 & 0xf }
func (w rxWB) hdrLen() int     { return int(w.dw0 & RxdHdrLenMask >> RxdHdrLenShift) }

func (r *rig) setupTx(q, size int) {
	x := &r.tx[q]
	x.size = size
	x.ring = r.alloc(size * descLen)
	x.bufs = r.alloc(size * txSlot)
	r.regs.Write32(TxQ(TDBAL, q), uint32(x.ring.Phys))
	r.regs.Write32(TxQ(TDBAH, q), uint32(uint64(x.ring.Phys)>>32))
	r.regs.Write32(TxQ(TDLEN, q), uint32(size*descLen))
	r.regs.Write32(TxQ(TDH, q), 0)
	r.regs.Write32(TxQ(TDT, q), 0)
	r.regs.Write32(TxQ(TXDCTL, q), DctlEnable)
	r.regs.Write32(TCTL, TctlEN|TctlPSP)
}

// txBuf copies data into slot i's buffer and returns its address.
func (r *rig) txBuf(q, i int, data []byte) uint64 {
	x := &r.tx[q]
	copy(x.bufs.Buf[i*txSlot:], data)
	return uint64(x.bufs.Phys) + uint64(i*txSlot)
}

// putTx writes d in the next slot without telling the device.
func (r *rig) putTx(q int, d [descLen]byte) int {
	x := &r.tx[q]
	i := x.tail
	copy(x.ring.Buf[i*descLen:], d[:])
	x.tail = (i + 1) % x.size
	return i
}

func (r *rig) kickTx(q int) { r.regs.Write32(TxQ(TDT, q), uint32(r.tx[q].tail)) }

func (r *rig) txStatus(q, i int) uint32 {
	return binary.LittleEndian.Uint32(r.tx[q].ring.Buf[i*descLen+12:])
}

// send queues one packet from a single buffer with an optional context.
// Without TSE and without a PAYLEN in olinfo, PAYLEN is the packet's length.
func (r *rig) send(q int, pkt []byte, ctx *[descLen]byte, cmd, olinfo uint32) int {
	if cmd&TxdCmdTSE == 0 && olinfo>>TxdPaylenShift == 0 {
		olinfo |= uint32(len(pkt)) << TxdPaylenShift
	}
	if ctx != nil {
		r.putTx(q, *ctx)
	}
	i := r.tx[q].tail
	addr := r.txBuf(q, i, pkt)
	return r.putTx(q, dataTx(addr, len(pkt), cmd|TxdCmdEOP|TxdCmdRS, olinfo))
}

func dataTx(addr uint64, n int, cmd, olinfo uint32) (d [descLen]byte) {
	le := binary.LittleEndian
	le.PutUint64(d[0:], addr)
	le.PutUint32(d[8:], uint32(n)|TxdDTYPData<<TxdDTYPShift|TxdCmdDEXT|cmd)
	le.PutUint32(d[12:], olinfo)
	return d
}

func ctxTx(macLen, ipLen int, vlan uint16, tucmd uint32, l4Len, mss int, idx uint32) (d [descLen]byte) {
	le := binary.LittleEndian
	le.PutUint32(d[0:], uint32(ipLen)|uint32(macLen)<<TxdMACLenShift|uint32(vlan)<<16)
	le.PutUint32(d[8:], TxdDTYPCtx<<TxdDTYPShift|TxdCmdDEXT|tucmd)
	le.PutUint32(d[12:], idx<<4|uint32(l4Len)<<TxdL4LenShift|uint32(mss)<<TxdMSSShift)
	return d
}

// Packet builders, using gVisor's header package.

func ethernet(dst, src [6]byte, typ tcpip.NetworkProtocolNumber, capacity int) []byte {
	f := make([]byte, header.EthernetMinimumSize, header.EthernetMinimumSize+capacity)
	header.Ethernet(f).Encode(&header.EthernetFields{
		SrcAddr: tcpip.LinkAddress(src[:]), DstAddr: tcpip.LinkAddress(dst[:]), Type: typ,
	})
	return f
}

func payloadBytes(n int, seed byte) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = seed + byte(i*7)
	}
	return p
}

// tcpFrame builds Ethernet/IP/TCP. With complete the checksums are final;
// otherwise the IPv4 checksum is zero and the TCP field holds the
// pseudo-header sum over pseudoLen, as a driver leaves them for offload.
func tcpFrame(v6 bool, dst [6]byte, payload []byte, flags header.TCPFlags, complete bool, pseudoLen int) []byte {
	const tcpLen = header.TCPMinimumSize
	var f []byte
	var src, dstA tcpip.Address
	ipLen := header.IPv4MinimumSize
	if v6 {
		ipLen = header.IPv6MinimumSize
		src, dstA = srcIP6, dstIP6
		f = ethernet(dst, peerMAC, header.IPv6ProtocolNumber, ipLen+tcpLen+len(payload))
		f = f[:header.EthernetMinimumSize+ipLen]
		header.IPv6(f[header.EthernetMinimumSize:]).Encode(&header.IPv6Fields{
			PayloadLength: uint16(tcpLen + len(payload)), TransportProtocol: header.TCPProtocolNumber,
			HopLimit: 64, SrcAddr: src, DstAddr: dstA,
		})
	} else {
		src, dstA = srcIP4, dstIP4
		f = ethernet(dst, peerMAC, header.IPv4ProtocolNumber, ipLen+tcpLen+len(payload))
		f = f[:header.EthernetMinimumSize+ipLen]
		ip := header.IPv4(f[header.EthernetMinimumSize:])
		ip.Encode(&header.IPv4Fields{
			TotalLength: uint16(ipLen + tcpLen + len(payload)), ID: 0x1234, TTL: 64,
			Protocol: uint8(header.TCPProtocolNumber), SrcAddr: src, DstAddr: dstA,
		})
		if complete {
			ip.SetChecksum(^ip.CalculateChecksum())
		}
	}
	f = f[:len(f)+tcpLen]
	l4off := header.EthernetMinimumSize + ipLen
	header.TCP(f[l4off:]).Encode(&header.TCPFields{
		SrcPort: 40000, DstPort: 80, SeqNum: 1000, AckNum: 77,
		DataOffset: tcpLen, Flags: flags, WindowSize: 65535,
	})
	f = append(f, payload...)
	l4 := f[l4off:]
	if complete {
		s := header.PseudoHeaderChecksum(header.TCPProtocolNumber, src, dstA, uint16(len(l4)))
		header.TCP(l4).SetChecksum(^checksum.Checksum(l4, s))
	} else {
		header.TCP(l4).SetChecksum(header.PseudoHeaderChecksum(header.TCPProtocolNumber, src, dstA, uint16(pseudoLen)))
	}
	return f
}

// udpFrame builds Ethernet/IP/UDP; complete as for tcpFrame.
func udpFrame(v6 bool, dst [6]byte, payload []byte, complete bool) []byte {
	const udpLen = header.UDPMinimumSize
	var f []byte
	var src, dstA tcpip.Address
	ipLen := header.IPv4MinimumSize
	if v6 {
		ipLen = header.IPv6MinimumSize
		src, dstA = srcIP6, dstIP6
		f = ethernet(dst, peerMAC, header.IPv6ProtocolNumber, ipLen+udpLen+len(payload))
		f = f[:header.EthernetMinimumSize+ipLen]
		header.IPv6(f[header.EthernetMinimumSize:]).Encode(&header.IPv6Fields{
			PayloadLength: uint16(udpLen + len(payload)), TransportProtocol: header.UDPProtocolNumber,
			HopLimit: 64, SrcAddr: src, DstAddr: dstA,
		})
	} else {
		src, dstA = srcIP4, dstIP4
		f = ethernet(dst, peerMAC, header.IPv4ProtocolNumber, ipLen+udpLen+len(payload))
		f = f[:header.EthernetMinimumSize+ipLen]
		ip := header.IPv4(f[header.EthernetMinimumSize:])
		ip.Encode(&header.IPv4Fields{
			TotalLength: uint16(ipLen + udpLen + len(payload)), ID: 7, TTL: 64,
			Protocol: uint8(header.UDPProtocolNumber), SrcAddr: src, DstAddr: dstA,
		})
		ip.SetChecksum(^ip.CalculateChecksum())
	}
	f = f[:len(f)+udpLen]
	l4off := header.EthernetMinimumSize + ipLen
	header.UDP(f[l4off:]).Encode(&header.UDPFields{SrcPort: 5000, DstPort: 53, Length: uint16(udpLen + len(payload))})
	f = append(f, payload...)
	l4 := f[l4off:]
	s := header.PseudoHeaderChecksum(header.UDPProtocolNumber, src, dstA, uint16(len(l4)))
	if complete {
		header.UDP(l4).SetChecksum(^checksum.Checksum(l4, s))
	} else {
		header.UDP(l4).SetChecksum(s)
	}
	return f
}
