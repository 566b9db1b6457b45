package m82576

import (
	"encoding/binary"
	"testing"

	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/nicmodel"
	"github.com/ether9/ether9/kernel/sim/nicmodel/nicmodeltest"
	"github.com/ether9/ether9/pci"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

var (
	nicAddr = pci.Addr{Dev: 3}
	ourMAC  = [6]byte{0x02, 0x00, 0x00, 0xaa, 0xbb, 0x01}
	peerMAC = [6]byte{0x02, 0x00, 0x00, 0xaa, 0xbb, 0x02}
	srcIP4  = nicmodeltest.IP4B
	dstIP4  = nicmodeltest.IP4A
	srcIP6  = nicmodeltest.IP6B
	dstIP6  = nicmodeltest.IP6A
)

// rig is the shared test bench with this model on its bus and a minimal
// hand-written driver: rings in coherent memory, registers through the
// bus, DMA addresses physical.
type rig struct {
	*nicmodeltest.Bench
	nic *NIC

	rx [numQueues]rxRing
	tx [numQueues]txRingT
}

type rxRing struct {
	ring, bufs kernel.Region
	size       int
	bufSize    int
	next       int // next descriptor the test expects to complete
}

type txRingT struct {
	ring, bufs kernel.Region
	size       int
	tail       int
	bufOff     int
}

func newRig(t testing.TB) *rig {
	t.Helper()
	return newRigWith(t, Options{MAC: ourMAC})
}

// newRigWith is newRig with the model built with opt.
func newRigWith(t testing.TB, opt Options) *rig {
	t.Helper()
	b, n := nicmodeltest.Plug(t, nicmodeltest.Config{Addr: nicAddr, IO: true},
		func(m *sim.Machine, a pci.Addr) (*NIC, error) { return Plug(m, a, opt) })
	b.Regs.Write32(nicmodel.CTRL, b.Regs.Read32(nicmodel.CTRL)|nicmodel.CtrlSLU)
	return &rig{Bench: b, nic: n}
}

// setupRx gives queue q a ring of size advanced one-buffer descriptors of
// bufSize (a multiple of 1 KiB), all handed to the device but one.
func (r *rig) setupRx(q uint32, size, bufSize int) {
	rr := &r.rx[q]
	rr.ring, rr.bufs = r.Alloc(size*descLen), r.Alloc(size*bufSize)
	rr.size, rr.bufSize = size, bufSize
	qo := q * queueSize
	r.Regs.Write32(RDBAL+qo, uint32(rr.ring.Phys))
	r.Regs.Write32(RDBAH+qo, uint32(uint64(rr.ring.Phys)>>32))
	r.Regs.Write32(RDLEN+qo, uint32(size*descLen))
	r.Regs.Write32(SRRCTL+qo, uint32(bufSize>>10)|DescTypeAdvOneBuf<<SrrctlDescTypeSh)
	r.Regs.Write32(RDH+qo, 0)
	for i := range size {
		r.armRx(q, i)
	}
	r.Regs.Write32(RXDCTL+qo, RxdctlEnable)
	r.Regs.Write32(RDT+qo, uint32(size-1))
	r.Regs.Write32(nicmodel.RCTL, nicmodel.RctlEN|nicmodel.RctlBAM|nicmodel.RctlSECRC)
}

// armRx writes descriptor i back in its read format.
func (r *rig) armRx(q uint32, i int) {
	rr := &r.rx[q]
	d := rr.ring.Buf[i*descLen : (i+1)*descLen]
	binary.LittleEndian.PutUint64(d[0:], uint64(rr.bufs.Phys)+uint64(i*rr.bufSize))
	binary.LittleEndian.PutUint64(d[8:], 0)
}

// rxWB is a decoded advanced write-back.
type rxWB struct {
	info, hash, stErr uint32
	length, vlan      uint16
}

func (r *rig) rxDesc(q uint32, i int) rxWB {
	d := r.rx[q].ring.Buf[i*descLen:]
	le := binary.LittleEndian
	return rxWB{le.Uint32(d[0:]), le.Uint32(d[4:]), le.Uint32(d[8:]), le.Uint16(d[12:]), le.Uint16(d[14:])}
}

// takeRx returns the next completed frame on queue q and its last
// write-back, re-arms its descriptors and returns them to the device.
func (r *rig) takeRx(q uint32) (frame []byte, wb rxWB, ok bool) {
	rr := &r.rx[q]
	for {
		i := rr.next
		wb = r.rxDesc(q, i)
		if wb.stErr&RxdDD == 0 {
			return nil, wb, false
		}
		frame = append(frame, rr.bufs.Buf[i*rr.bufSize:i*rr.bufSize+int(wb.length)]...)
		r.armRx(q, i)
		r.Regs.Write32(RDT+q*queueSize, uint32(i))
		rr.next = (i + 1) % rr.size
		if wb.stErr&RxdEOP != 0 {
			return frame, wb, true
		}
	}
}

// setupTx gives queue q a ring of size descriptors and a buffer area.
func (r *rig) setupTx(q uint32, size int) {
	tr := &r.tx[q]
	tr.ring, tr.bufs = r.Alloc(size*descLen), r.Alloc(1<<20)
	tr.size = size
	qo := q * queueSize
	r.Regs.Write32(TDBAL+qo, uint32(tr.ring.Phys))
	r.Regs.Write32(TDBAH+qo, uint32(uint64(tr.ring.Phys)>>32))
	r.Regs.Write32(TDLEN+qo, uint32(size*descLen))
	r.Regs.Write32(TDH+qo, 0)
	r.Regs.Write32(TDT+qo, 0)
	r.Regs.Write32(TXDCTL+qo, TxdctlEnable)
	r.Regs.Write32(nicmodel.TCTL, r.Regs.Read32(nicmodel.TCTL)|nicmodel.TctlEN)
}

// txDesc is one descriptor to queue, by its two qwords.
type txDesc struct{ lo, hi uint64 }

// buf copies b into the queue's buffer area and returns its address.
func (r *rig) buf(q uint32, b []byte) uint64 {
	tr := &r.tx[q]
	if tr.bufOff+len(b) > len(tr.bufs.Buf) {
		tr.bufOff = 0
	}
	copy(tr.bufs.Buf[tr.bufOff:], b)
	a := uint64(tr.bufs.Phys) + uint64(tr.bufOff)
	tr.bufOff += (len(b) + 63) &^ 63
	return a
}

func ctxDesc(vlan uint16, macLen, ipLen int, tucmd uint32, mss, l4Len, idx int) txDesc {
	lo := uint64(vlan)<<CtxVLANSh | uint64(macLen)<<CtxMACLenSh | uint64(ipLen)
	hi := uint64(tucmd|DTypContext<<20|TxdDEXT<<24) | uint64(uint32(mss)<<CtxMSSSh|uint32(l4Len)<<CtxL4LenSh|uint32(idx)<<CtxIdxSh)<<32
	return txDesc{lo, hi}
}

func dataDesc(addr uint64, length int, cmd uint8, olinfo uint32) txDesc {
	return txDesc{addr, uint64(uint32(length)|DTypData<<20|uint32(cmd|TxdDEXT)<<24) | uint64(olinfo)<<32}
}

// post writes descriptors at the tail of queue q and moves TDT past them.
func (r *rig) post(q uint32, ds ...txDesc) {
	tr := &r.tx[q]
	for _, d := range ds {
		b := tr.ring.Buf[tr.tail*descLen:]
		binary.LittleEndian.PutUint64(b[0:], d.lo)
		binary.LittleEndian.PutUint64(b[8:], d.hi)
		tr.tail = (tr.tail + 1) % tr.size
	}
	r.Regs.Write32(TDT+q*queueSize, uint32(tr.tail))
}

// Frame builders, on the shared ones: from the peer to us, padded to the
// 60-byte minimum as a sender does, checksums final.

func ethHdr(b []byte, et tcpip.NetworkProtocolNumber) {
	copy(b, nicmodeltest.Ethernet(ourMAC, peerMAC, et, 0))
}

// tcp4 builds an Ethernet/IPv4/TCP frame, ACK and PSH set.
func tcp4(src, dst tcpip.Address, sport, dport uint16, payload []byte) []byte {
	return nicmodeltest.Packet{
		Dst: ourMAC, Src: peerMAC, SrcIP: src, DstIP: dst, SrcPort: sport, DstPort: dport,
		ID: 7, Seq: 1000, Ack: 1, Flags: header.TCPFlagAck | header.TCPFlagPsh, Payload: payload, Pad: true,
	}.TCP()
}

// udp4 builds an Ethernet/IPv4/UDP frame.
func udp4(src, dst tcpip.Address, sport, dport uint16, payload []byte) []byte {
	return nicmodeltest.Packet{
		Dst: ourMAC, Src: peerMAC, SrcIP: src, DstIP: dst, SrcPort: sport, DstPort: dport,
		ID: 9, Payload: payload, Pad: true,
	}.UDP()
}

// tcp6 builds an Ethernet/IPv6/TCP frame, ACK set.
func tcp6(src, dst tcpip.Address, sport, dport uint16, payload []byte) []byte {
	return nicmodeltest.Packet{
		Dst: ourMAC, Src: peerMAC, V6: true, SrcIP: src, DstIP: dst, SrcPort: sport, DstPort: dport,
		Seq: 1000, Ack: 1, Flags: header.TCPFlagAck, Payload: payload, Pad: true,
	}.TCP()
}
