package m82574

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
	nicAddr = pci.Addr{Dev: 2}
	ourMAC  = [6]byte{0x02, 0x00, 0x00, 0xaa, 0xbb, 0x01}
	peerMAC = [6]byte{0x02, 0x00, 0x00, 0xaa, 0xbb, 0x02}
	srcIP4  = tcpip.AddrFrom4([4]byte{10, 0, 0, 1})
	dstIP4  = tcpip.AddrFrom4([4]byte{10, 0, 0, 2})
	srcIP6  = tcpip.AddrFrom16([16]byte{0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1})
	dstIP6  = tcpip.AddrFrom16([16]byte{0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2})
)

const ringSize = 16

// rig is a machine with one model on its bus, a wire whose far end the
// test holds, and a minimal hand-written driver: rings in coherent memory,
// registers through the bus. With VT-d off, DMA addresses are physical.
type rig struct {
	t    *testing.T
	m    *sim.Machine
	nic  *NIC
	regs kernel.Regs
	w    *wire.Wire
	irq  *sim.IRQ

	mu  sync.Mutex
	out [][]byte // frames the model sent

	rxRing, rxBufs kernel.Region
	txRing, txBufs kernel.Region
	bufSize        int
	txTail         int
}

func newRig(t *testing.T, pers Personality) *rig {
	t.Helper()
	m, err := sim.New(sim.Config{VTd: vtd.QEMU()})
	if err != nil {
		t.Fatal(err)
	}
	n, err := Plug(m, nicAddr, Options{Personality: pers, MAC: ourMAC})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Bus.WriteConfig(nicAddr, 4, 2, sim.CmdMemory|sim.CmdIO|sim.CmdBusMaster); err != nil {
		t.Fatal(err)
	}
	regs, err := m.Bus.Regs(nicAddr, 0)
	if err != nil {
		t.Fatal(err)
	}
	w, err := wire.New(wire.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, m: m, nic: n, regs: regs, w: w, irq: m.IRQ(nicAddr)}
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

// setupRx builds an RX ring of ringSize descriptors, each with a buffer of
// bufSize bytes, hands all but one to the device and enables the receiver.
func (r *rig) setupRx(rctl uint32, ext bool) {
	r.bufSize = rxBufSize(rctl)
	r.rxRing = r.alloc(ringSize * descLen)
	r.rxBufs = r.alloc(ringSize * r.bufSize)
	for i := range ringSize {
		r.armRx(i)
	}
	r.regs.Write32(RDBAL, uint32(r.rxRing.Phys))
	r.regs.Write32(RDBAH, uint32(uint64(r.rxRing.Phys)>>32))
	r.regs.Write32(RDLEN, uint32(ringSize*descLen))
	r.regs.Write32(RDH, 0)
	r.regs.Write32(RDT, uint32(ringSize-1))
	if ext {
		r.regs.Write32(RFCTL, RfctlEXSTEN)
	}
	r.regs.Write32(RCTL, rctl|RctlEN)
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
	r.regs.Write32(TDBAL, uint32(r.txRing.Phys))
	r.regs.Write32(TDBAH, uint32(uint64(r.txRing.Phys)>>32))
	r.regs.Write32(TDLEN, uint32(ringSize*descLen))
	r.regs.Write32(TDH, 0)
	r.regs.Write32(TDT, 0)
	r.regs.Write32(TCTL, TctlEN|TctlPSP)
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

func (r *rig) kickTx() { r.regs.Write32(TDT, uint32(r.txTail)) }

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

// Packet builders, using gVisor's header package.

func ethernet(dst, src [6]byte, typ tcpip.NetworkProtocolNumber, payloadLen int) []byte {
	f := make([]byte, header.EthernetMinimumSize, header.EthernetMinimumSize+payloadLen)
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

// tcp4 builds an Ethernet/IPv4/TCP frame. With complete the checksums are
// final; otherwise the TCP checksum field holds the pseudo-header sum
// (with length pseudoLen) and the IP checksum is zero, as a driver leaves
// them for offload.
func tcp4(dst [6]byte, payload []byte, flags header.TCPFlags, complete bool, pseudoLen int) []byte {
	const ipLen, tcpLen = header.IPv4MinimumSize, header.TCPMinimumSize
	f := ethernet(dst, peerMAC, header.IPv4ProtocolNumber, ipLen+tcpLen+len(payload))
	f = f[:header.EthernetMinimumSize+ipLen+tcpLen]
	ip := header.IPv4(f[header.EthernetMinimumSize:])
	ip.Encode(&header.IPv4Fields{
		TotalLength: uint16(ipLen + tcpLen + len(payload)), ID: 0x1234, TTL: 64,
		Protocol: uint8(header.TCPProtocolNumber), SrcAddr: srcIP4, DstAddr: dstIP4,
	})
	tcp := header.TCP(ip[ipLen:])
	tcp.Encode(&header.TCPFields{
		SrcPort: 40000, DstPort: 80, SeqNum: 1000, AckNum: 77,
		DataOffset: tcpLen, Flags: flags, WindowSize: 65535,
	})
	f = append(f, payload...)
	l4 := f[header.EthernetMinimumSize+ipLen:]
	if complete {
		ip.SetChecksum(^ip.CalculateChecksum())
		s := header.PseudoHeaderChecksum(header.TCPProtocolNumber, srcIP4, dstIP4, uint16(len(l4)))
		header.TCP(l4).SetChecksum(^checksum.Checksum(l4, s))
	} else {
		header.TCP(l4).SetChecksum(header.PseudoHeaderChecksum(header.TCPProtocolNumber, srcIP4, dstIP4, uint16(pseudoLen)))
	}
	return f
}

func udp4(dst [6]byte, payload []byte) []byte {
	const ipLen, udpLen = header.IPv4MinimumSize, header.UDPMinimumSize
	f := ethernet(dst, peerMAC, header.IPv4ProtocolNumber, ipLen+udpLen+len(payload))
	f = f[:header.EthernetMinimumSize+ipLen+udpLen]
	ip := header.IPv4(f[header.EthernetMinimumSize:])
	ip.Encode(&header.IPv4Fields{
		TotalLength: uint16(ipLen + udpLen + len(payload)), ID: 7, TTL: 64,
		Protocol: uint8(header.UDPProtocolNumber), SrcAddr: srcIP4, DstAddr: dstIP4,
	})
	ip.SetChecksum(^ip.CalculateChecksum())
	u := header.UDP(ip[ipLen:])
	u.Encode(&header.UDPFields{SrcPort: 5000, DstPort: 53, Length: uint16(udpLen + len(payload))})
	f = append(f, payload...)
	l4 := f[header.EthernetMinimumSize+ipLen:]
	s := header.PseudoHeaderChecksum(header.UDPProtocolNumber, srcIP4, dstIP4, uint16(len(l4)))
	header.UDP(l4).SetChecksum(^checksum.Checksum(l4, s))
	return f
}
