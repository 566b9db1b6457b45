package m82574

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
	nicAddr = pci.Addr{Dev: 2}
	ourMAC  = [6]byte{0x02, 0x00, 0x00, 0xaa, 0xbb, 0x01}
	peerMAC = [6]byte{0x02, 0x00, 0x00, 0xaa, 0xbb, 0x02}
	srcIP4  = nicmodeltest.IP4A
	dstIP4  = nicmodeltest.IP4B
	srcIP6  = nicmodeltest.IP6A
	dstIP6  = nicmodeltest.IP6B
)

const ringSize = 16

// rig is the shared test bench with this model on its bus and a minimal
// hand-written driver: rings in coherent memory, registers through the
// bus, DMA addresses physical.
type rig struct {
	*nicmodeltest.Bench
	nic *NIC
	irq *sim.IRQ

	rxRing, rxBufs kernel.Region
	txRing, txBufs kernel.Region
	bufSize        int
	txTail         int
}

func newRig(t testing.TB, pers Personality) *rig {
	t.Helper()
	return newRigWith(t, Options{Personality: pers, MAC: ourMAC})
}

// newRigWith is newRig with the model built with opt.
func newRigWith(t testing.TB, opt Options) *rig {
	t.Helper()
	b, n := nicmodeltest.Plug(t, nicmodeltest.Config{Addr: nicAddr, IO: true}, func(m *sim.Machine, a pci.Addr) (*NIC, error) {
		return Plug(m, a, opt)
	})
	return &rig{Bench: b, nic: n, irq: b.M.IRQ(nicAddr)}
}

func (r *rig) alloc(size int) kernel.Region { return r.Alloc(size) }
func (r *rig) sent() [][]byte               { return r.Sent() }

func (r *rig) setupRx(rctl uint32, ext bool) {
	r.bufSize = rxBufSize(rctl)
	r.rxRing = r.alloc(ringSize * descLen)
	r.rxBufs = r.alloc(ringSize * r.bufSize)
	for i := range ringSize {
		r.armRx(i)
	}
	r.Regs.Write32(RDBAL, uint32(r.rxRing.Phys))
	r.Regs.Write32(RDBAH, uint32(uint64(r.rxRing.Phys)>>32))
	r.Regs.Write32(RDLEN, uint32(ringSize*descLen))
	r.Regs.Write32(RDH, 0)
	r.Regs.Write32(RDT, uint32(ringSize-1))
	if ext {
		r.Regs.Write32(nicmodel.RFCTL, RfctlEXSTEN)
	}
	r.Regs.Write32(nicmodel.RCTL, rctl|nicmodel.RctlEN)
}

func (r *rig) armRx(i int) {
	d := r.rxRing.Buf[i*descLen : (i+1)*descLen]
	clear(d)
	binary.LittleEndian.PutUint64(d, uint64(r.rxBufs.Phys)+uint64(i*r.bufSize))
}

func (r *rig) rxDesc(i int) []byte { return r.rxRing.Buf[i*descLen : (i+1)*descLen] }
func (r *rig) rxBuf(i int) []byte  { return r.rxBufs.Buf[i*r.bufSize : (i+1)*r.bufSize] }

func (r *rig) setupTx() {
	r.txRing = r.alloc(ringSize * descLen)
	r.txBufs = r.alloc(ringSize * 16384)
	r.Regs.Write32(TDBAL, uint32(r.txRing.Phys))
	r.Regs.Write32(TDBAH, uint32(uint64(r.txRing.Phys)>>32))
	r.Regs.Write32(TDLEN, uint32(ringSize*descLen))
	r.Regs.Write32(TDH, 0)
	r.Regs.Write32(TDT, 0)
	r.Regs.Write32(nicmodel.TCTL, nicmodel.TctlEN|nicmodel.TctlPSP)
}

// txBuf copies data into the buffer of slot i and returns its address.
func (r *rig) txBuf(i int, data []byte) uint64 {
	copy(r.txBufs.Buf[i*16384:], data)
	return uint64(r.txBufs.Phys) + uint64(i*16384)
}

// putTx writes descriptor d in the next slot, without telling the device.
func (r *rig) putTx(d [descLen]byte) int {
	i := r.txTail
	copy(r.txRing.Buf[i*descLen:], d[:])
	r.txTail = (i + 1) % ringSize
	return i
}

func (r *rig) kickTx() { r.Regs.Write32(TDT, uint32(r.txTail)) }

func (r *rig) txDesc(i int) []byte { return r.txRing.Buf[i*descLen : (i+1)*descLen] }

func legacyTx(addr uint64, n int, cmd uint8, cso, css uint8) (d [descLen]byte) {
	binary.LittleEndian.PutUint64(d[0:], addr)
	binary.LittleEndian.PutUint16(d[8:], uint16(n))
	d[10], d[11], d[13] = cso, cmd, css
	return d
}

func dataTx(addr uint64, n int, dcmd, popts uint8) (d [descLen]byte) {
	binary.LittleEndian.PutUint64(d[0:], addr)
	binary.LittleEndian.PutUint32(d[8:], uint32(n)|TxdDTYPData<<20|uint32(dcmd|TxdDEXT)<<24)
	d[13] = popts
	return d
}

func contextTx(c txContext) (d [descLen]byte) {
	d[0], d[1] = c.ipcss, c.ipcso
	binary.LittleEndian.PutUint16(d[2:], c.ipcse)
	d[4], d[5] = c.tucss, c.tucso
	binary.LittleEndian.PutUint16(d[6:], c.tucse)
	binary.LittleEndian.PutUint32(d[8:], c.paylen|TxdDTYPContext<<20|uint32(c.tucmd|TxdDEXT)<<24)
	d[13] = c.hdrlen
	binary.LittleEndian.PutUint16(d[14:], c.mss)
	return d
}

// Packet builders, on the shared ones.

func payloadBytes(n int, seed byte) []byte { return nicmodeltest.Payload(n, seed) }

func ethernet(dst, src [6]byte, typ tcpip.NetworkProtocolNumber, payloadLen int) []byte {
	return nicmodeltest.Ethernet(dst, src, typ, header.EthernetMinimumSize+payloadLen)
}

// tcp4 builds an Ethernet/IPv4/TCP frame from the peer. With complete the
// checksums are final; otherwise the TCP checksum field holds the
// pseudo-header sum (with length pseudoLen) and the IP checksum is zero,
// as a driver leaves them for offload.
func tcp4(dst [6]byte, payload []byte, flags header.TCPFlags, complete bool, pseudoLen int) []byte {
	return nicmodeltest.Packet{
		Dst: dst, Src: peerMAC, ID: 0x1234, Seq: 1000, Ack: 77, Flags: flags, Payload: payload,
		Offload: !complete, PseudoLen: pseudoLen,
	}.TCP()
}

// udp4 builds an Ethernet/IPv4/UDP frame from the peer, checksums final.
func udp4(dst [6]byte, payload []byte) []byte {
	return nicmodeltest.Packet{Dst: dst, Src: peerMAC, ID: 7, Payload: payload}.UDP()
}
