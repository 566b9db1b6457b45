package mi225

import (
	"encoding/binary"
	"testing"

	"github.com/ether9/ether9/kernel/sim/nicmodel"
	"github.com/ether9/ether9/kernel/sim/nicmodel/nicmodeltest"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

const etherTypeTest = 0x88b5 // IEEE local experimental

// steerRig has four queues and RSS on with every table entry naming
// queue 1, so a frame off queue 1 was placed by something ahead of RSS.
func steerRig(t *testing.T) *rig {
	r := newRig(t, 0x15f3)
	for i := range 32 {
		r.Regs.Write32(nicmodel.RETA+4*uint32(i), 0x01010101)
	}
	r.Regs.Write32(nicmodel.MRQC, MrqcEnableRSS|nicmodel.MrqcTCPIPv4|nicmodel.MrqcIPv4|nicmodel.MrqcIPv6)
	r.Regs.Write32(nicmodel.RXCSUM, nicmodel.RxcsumIPOFL|nicmodel.RxcsumTUOFL|nicmodel.RxcsumPCSD)
	for q := range Queues {
		r.setupRx(q, 16, 2048, SrrctlDescAdvOne, rctlStd)
	}
	return r
}

func etqfFilter(etype uint16, q int, flags uint32) uint32 {
	return uint32(etype) | uint32(q)<<EtqfQueueShift | flags
}

// queueOf sends f and returns the queue whose ring got it.
func queueOf(t *testing.T, r *rig, f []byte) int {
	t.Helper()
	before := r.nic.Counters().RxQueueFrames
	r.Wire.B().Send(f)
	after := r.nic.Counters().RxQueueFrames
	got := -1
	for q := range Queues {
		switch after[q] - before[q] {
		case 0:
		case 1:
			if got >= 0 {
				t.Fatalf("frame on queues %d and %d", got, q)
			}
			got = q
		default:
			t.Fatalf("queue %d got %d frames for one", q, after[q]-before[q])
		}
	}
	if got < 0 {
		t.Fatalf("frame on no queue (counters %+v)", r.nic.Counters())
	}
	return got
}

func tcp4() []byte {
	return tcpFrame(false, ourMAC, payloadBytes(20, 3), header.TCPFlagAck, true, 0)
}

func experimental(dst [6]byte) []byte {
	return ethernet(dst, peerMAC, etherTypeTest, 46)[:header.EthernetMinimumSize+46]
}

func TestETQFSteersAheadOfRSS(t *testing.T) {
	r := steerRig(t)
	if q := queueOf(t, r, tcp4()); q != 1 {
		t.Fatalf("TCP/IPv4 on queue %d before any filter, want RSS's 1", q)
	}
	if q := queueOf(t, r, experimental(ourMAC)); q != 0 {
		t.Fatalf("non-IP frame on queue %d, want 0 (no RSS type)", q)
	}
	r.Regs.Write32(ETQF+4*2, etqfFilter(etherTypeTest, 3, EtqfFilterEnable|EtqfQueueEnable))
	r.Regs.Write32(ETQF+4*5, etqfFilter(uint16(header.IPv4ProtocolNumber), 2, EtqfFilterEnable|EtqfQueueEnable))
	if q := queueOf(t, r, experimental(ourMAC)); q != 3 {
		t.Fatalf("EtherType %#x on queue %d, want the filter's 3", etherTypeTest, q)
	}
	if q := queueOf(t, r, tcp4()); q != 2 {
		t.Fatalf("IPv4 on queue %d, want the filter's 2 ahead of RSS", q)
	}
	// An untouched EtherType still goes by RSS.
	if q := queueOf(t, r, udpFrame(true, ourMAC, payloadBytes(10, 1), true)); q != 1 {
		t.Fatalf("IPv6 on queue %d, want RSS's 1", q)
	}
	// The frame's data is the frame sent, at the start of the buffer.
	f := experimental(ourMAC)
	binary.BigEndian.PutUint32(f[20:], 0xdeadbeef)
	head := r.Regs.Read32(RxQ(RDH, 3))
	if q := queueOf(t, r, f); q != 3 {
		t.Fatalf("on queue %d", q)
	}
	wb := r.rxDesc(3, int(head))
	if wb.status&RxdStaDD == 0 || wb.len() != len(f) || string(r.rxBuf(3, int(head), len(f))) != string(f) {
		t.Fatalf("queue 3 descriptor %d: status %#x len %d", head, wb.status, wb.len())
	}
}

func TestETQFEnables(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags uint32
		want  int
	}{
		{"both", EtqfFilterEnable | EtqfQueueEnable, 3},
		{"filter off", EtqfQueueEnable, 1},
		{"queue off", EtqfFilterEnable, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := steerRig(t)
			r.Regs.Write32(ETQF, etqfFilter(uint16(header.IPv4ProtocolNumber), 3, tc.flags))
			if q := queueOf(t, r, tcp4()); q != tc.want {
				t.Fatalf("on queue %d, want %d", q, tc.want)
			}
		})
	}
}

func TestETQFLastMatchDecides(t *testing.T) {
	r := steerRig(t)
	r.Regs.Write32(ETQF+4*1, etqfFilter(etherTypeTest, 2, EtqfFilterEnable|EtqfQueueEnable))
	r.Regs.Write32(ETQF+4*6, etqfFilter(etherTypeTest, 3, EtqfFilterEnable|EtqfQueueEnable))
	if q := queueOf(t, r, experimental(ourMAC)); q != 3 {
		t.Fatalf("on queue %d, want the last match's 3", q)
	}
	// The last match without queueing: no filter places the frame.
	r.Regs.Write32(ETQF+4*7, etqfFilter(etherTypeTest, 2, EtqfFilterEnable))
	if q := queueOf(t, r, experimental(ourMAC)); q != 0 {
		t.Fatalf("on queue %d, want 0", q)
	}
}

func TestETQFAfterVLANTag(t *testing.T) {
	r := steerRig(t)
	r.Regs.Write32(ETQF, etqfFilter(etherTypeTest, 2, EtqfFilterEnable|EtqfQueueEnable))
	plain := experimental(ourMAC)
	f := make([]byte, 0, len(plain)+vlanTagLen)
	f = append(f, plain[:12]...)
	f = binary.BigEndian.AppendUint16(f, 0x8100)
	f = binary.BigEndian.AppendUint16(f, 5)
	f = append(f, plain[12:]...)
	if q := queueOf(t, r, f); q != 2 {
		t.Fatalf("tagged frame on queue %d, want 2", q)
	}
}

func TestMACQueueSelectAheadOfETQF(t *testing.T) {
	r := steerRig(t)
	r.Regs.Write32(ETQF, etqfFilter(etherTypeTest, 2, EtqfFilterEnable|EtqfQueueEnable))
	mac := [6]byte{0x02, 0, 0, 0x22, 0x50, 0x09}
	r.Regs.Write32(nicmodel.RAL0+8, binary.LittleEndian.Uint32(mac[:4]))
	r.Regs.Write32(nicmodel.RAH0+8, uint32(binary.LittleEndian.Uint16(mac[4:]))|nicmodel.RahAV|1<<28|3<<18)
	if q := queueOf(t, r, experimental(mac)); q != 3 {
		t.Fatalf("on queue %d, want the address filter's 3", q)
	}
	if q := queueOf(t, r, experimental(ourMAC)); q != 2 {
		t.Fatalf("on queue %d, want the EtherType filter's 2", q)
	}
}

func udpTo(v6 bool, port uint16) []byte {
	return nicmodeltest.Packet{Dst: ourMAC, Src: peerMAC, V6: v6, DstPort: port, Payload: payloadBytes(20, 1), Pad: true}.UDP()
}

func tcpTo(port uint16, flags header.TCPFlags) []byte {
	return nicmodeltest.Packet{Dst: ourMAC, Src: peerMAC, DstPort: port, Flags: flags, Payload: payloadBytes(20, 1)}.TCP()
}

// wirePort is a port as IMIR holds it: its first byte on the wire in the
// register's low byte.
func wirePort(p uint16) uint32 { return uint32(p>>8 | p<<8&0xff00) }

// twoTuple programs filter i: protocol (0: bypassed) and destination port
// to queue q with priority prio, length and TCP flags bypassed.
func twoTuple(r *rig, i int, proto uint8, port uint16, q int, prio uint32) {
	ttqf := uint32(proto) | TtqfQueueEnable | uint32(q)<<TtqfQueueShift
	if proto == 0 {
		ttqf |= TtqfMaskProtocolBP
	}
	off := 4 * uint32(i)
	r.Regs.Write32(IMIR+off, wirePort(port)|prio<<ImirPriorityShift)
	r.Regs.Write32(IMIREXT+off, ImirextSizeBP|ImirextCtrlBP)
	r.Regs.Write32(TTQF+off, ttqf)
}

func TestTwoTupleSteersAheadOfRSS(t *testing.T) {
	r := steerRig(t)
	twoTuple(r, 0, 17, 0x1234, 3, 0)
	for _, v6 := range []bool{false, true} {
		if q := queueOf(t, r, udpTo(v6, 0x1234)); q != 3 {
			t.Fatalf("v6 %v: UDP to the filter's port on queue %d, want 3", v6, q)
		}
		if q := queueOf(t, r, udpTo(v6, 0x1235)); q != 1 {
			t.Fatalf("v6 %v: UDP to another port on queue %d, want RSS's 1", v6, q)
		}
	}
	// TCP to the port: the protocol differs.
	if q := queueOf(t, r, tcpTo(0x1234, header.TCPFlagAck)); q != 1 {
		t.Fatalf("TCP on queue %d, want RSS's 1", q)
	}
	// The port as the host reads it is not what the filter compares.
	twoTuple(r, 0, 17, 0x3412, 3, 0)
	if q := queueOf(t, r, udpTo(false, 0x1234)); q != 1 {
		t.Fatalf("byte-swapped port matched: queue %d", q)
	}
	// Protocol bypassed: TCP and UDP to the port alike.
	twoTuple(r, 0, 0, 0x1234, 2, 0)
	if q := queueOf(t, r, tcpTo(0x1234, header.TCPFlagAck)); q != 2 {
		t.Fatalf("TCP with the protocol bypassed on queue %d, want 2", q)
	}
	// Queue Enable off: no steering.
	r.Regs.Write32(TTQF, 17)
	if q := queueOf(t, r, udpTo(false, 0x1234)); q != 1 {
		t.Fatalf("disabled filter steered to queue %d", q)
	}
}

func TestTwoTuplePriorityAndOrder(t *testing.T) {
	r := steerRig(t)
	twoTuple(r, 1, 17, 53, 2, 1)
	twoTuple(r, 4, 0, 53, 3, 5)
	if q := queueOf(t, r, udpTo(false, 53)); q != 3 {
		t.Fatalf("on queue %d, want the higher priority's 3", q)
	}
	twoTuple(r, 4, 0, 53, 3, 1)
	if q := queueOf(t, r, udpTo(false, 53)); q != 2 {
		t.Fatalf("on queue %d, want the lower numbered filter's 2 at equal priority", q)
	}
	// The EtherType filters come first.
	r.Regs.Write32(ETQF, etqfFilter(uint16(header.IPv4ProtocolNumber), 0, EtqfFilterEnable|EtqfQueueEnable))
	if q := queueOf(t, r, udpTo(false, 53)); q != 0 {
		t.Fatalf("on queue %d, want the EtherType filter's 0", q)
	}
}

func TestTwoTupleFragmentsAndFlags(t *testing.T) {
	r := steerRig(t)
	twoTuple(r, 0, 17, 53, 3, 0)
	f := udpTo(false, 53)
	ip := header.IPv4(f[header.EthernetMinimumSize:])
	ip.SetFlagsFragmentOffset(header.IPv4FlagMoreFragments, 0)
	ip.SetChecksum(0)
	ip.SetChecksum(^ip.CalculateChecksum())
	if q := queueOf(t, r, f); q == 3 {
		t.Fatal("a fragment matched a port filter")
	}
	// TCP flags compared: SYN only.
	r.Regs.Write32(IMIREXT, ImirextSizeBP|(1<<(ImirextCtrlShift+4))) // bit 17: SYN
	r.Regs.Write32(TTQF, 6|TtqfQueueEnable|2<<TtqfQueueShift)
	if q := queueOf(t, r, tcpTo(53, header.TCPFlagSyn)); q != 2 {
		t.Fatalf("SYN on queue %d, want 2", q)
	}
	if q := queueOf(t, r, tcpTo(53, header.TCPFlagAck)); q != 1 {
		t.Fatalf("ACK on queue %d, want RSS's 1", q)
	}
	// A length threshold: only frames shorter than it.
	small, big := tcpTo(53, header.TCPFlagAck), tcpTo(53, header.TCPFlagAck)
	big = append(big[:len(big):len(big)], make([]byte, 100)...)
	ip = header.IPv4(big[header.EthernetMinimumSize:])
	ip.SetTotalLength(ip.TotalLength() + 100)
	ip.SetChecksum(0)
	ip.SetChecksum(^ip.CalculateChecksum())
	r.Regs.Write32(IMIREXT, ImirextCtrlBP|uint32(len(small)+1))
	if q := queueOf(t, r, small); q != 2 {
		t.Fatalf("short frame on queue %d, want 2", q)
	}
	if q := queueOf(t, r, big); q != 1 {
		t.Fatalf("long frame on queue %d, want RSS's 1", q)
	}
}
