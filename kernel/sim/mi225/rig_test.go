package mi225

import (
	"encoding/binary"
	"testing"

	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/nicmodel"
	"github.com/ether9/ether9/kernel/sim/nicmodel/nicmodeltest"
	"github.com/ether9/ether9/kernel/sim/wire"
	"github.com/ether9/ether9/pci"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

var (
	nicAddr = pci.Addr{Dev: 3}
	ourMAC  = [6]byte{0x02, 0x00, 0x00, 0x22, 0x50, 0x01}
	peerMAC = [6]byte{0x02, 0x00, 0x00, 0x22, 0x50, 0x02}
	srcIP4  = nicmodeltest.IP4A
	dstIP4  = nicmodeltest.IP4B
)

// rig is the shared test bench with this model on its bus and a small
// hand-written driver: rings in coherent memory, registers through the
// bus, DMA addresses physical.
type rig struct {
	*nicmodeltest.Bench
	nic *NIC

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
	return plugRig(t, Options{Device: dev, MAC: ourMAC})
}

func plugRig(t testing.TB, opt Options) *rig {
	t.Helper()
	b, n := nicmodeltest.Plug(t, nicmodeltest.Config{Addr: nicAddr, Wire: wire.Options{SpeedMbps: 2500}},
		func(m *sim.Machine, a pci.Addr) (*NIC, error) { return Plug(m, a, opt) })
	return &rig{Bench: b, nic: n}
}

func (r *rig) alloc(size int) kernel.Region { return r.Alloc(size) }
func (r *rig) sent() [][]byte               { return r.Sent() }

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
	r.Regs.Write32(RxQ(RDBAL, q), uint32(x.ring.Phys))
	r.Regs.Write32(RxQ(RDBAH, q), uint32(uint64(x.ring.Phys)>>32))
	r.Regs.Write32(RxQ(RDLEN, q), uint32(size*descLen))
	r.Regs.Write32(RxQ(SRRCTL, q), uint32(bufSize>>10)|4<<SrrctlBSizeHdrShift|srrctl)
	r.Regs.Write32(RxQ(RDH, q), 0)
	r.Regs.Write32(RxQ(RXDCTL, q), DctlEnable)
	r.Regs.Write32(RxQ(RDT, q), uint32(size-1))
	r.Regs.Write32(nicmodel.RCTL, rctl|nicmodel.RctlEN)
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
	r.Regs.Write32(TxQ(TDBAL, q), uint32(x.ring.Phys))
	r.Regs.Write32(TxQ(TDBAH, q), uint32(uint64(x.ring.Phys)>>32))
	r.Regs.Write32(TxQ(TDLEN, q), uint32(size*descLen))
	r.Regs.Write32(TxQ(TDH, q), 0)
	r.Regs.Write32(TxQ(TDT, q), 0)
	r.Regs.Write32(TxQ(TXDCTL, q), DctlEnable)
	r.Regs.Write32(nicmodel.TCTL, nicmodel.TctlEN|nicmodel.TctlPSP)
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

func (r *rig) kickTx(q int) { r.Regs.Write32(TxQ(TDT, q), uint32(r.tx[q].tail)) }

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

// Packet builders, on the shared ones.

func payloadBytes(n int, seed byte) []byte { return nicmodeltest.Payload(n, seed) }

func ethernet(dst, src [6]byte, typ tcpip.NetworkProtocolNumber, capacity int) []byte {
	return nicmodeltest.Ethernet(dst, src, typ, header.EthernetMinimumSize+capacity)
}

// tcpFrame builds Ethernet/IP/TCP from the peer. With complete the
// checksums are final; otherwise the IPv4 checksum is zero and the TCP
// field holds the pseudo-header sum over pseudoLen, as a driver leaves
// them for offload.
func tcpFrame(v6 bool, dst [6]byte, payload []byte, flags header.TCPFlags, complete bool, pseudoLen int) []byte {
	return nicmodeltest.Packet{
		Dst: dst, Src: peerMAC, V6: v6, ID: 0x1234, Seq: 1000, Ack: 77, Flags: flags, Payload: payload,
		Offload: !complete, PseudoLen: pseudoLen,
	}.TCP()
}

// udpFrame builds Ethernet/IP/UDP; complete as for tcpFrame, the
// pseudo-header sum over the datagram's length.
func udpFrame(v6 bool, dst [6]byte, payload []byte, complete bool) []byte {
	return nicmodeltest.Packet{
		Dst: dst, Src: peerMAC, V6: v6, ID: 7, Payload: payload,
		Offload: !complete, PseudoLen: header.UDPMinimumSize + len(payload),
	}.UDP()
}
