package m82576

import (
	"encoding/binary"
	"testing"

	"github.com/ether9/ether9/kernel/sim/nicmodel"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

func TestEtherTypeFilter(t *testing.T) {
	r := newRig(t)
	for q := range uint32(4) {
		r.setupRx(q, 8, 2048)
	}
	r.programRSS(nicmodel.MrqcIPv4)
	r.programRETA(func(uint32) uint32 { return 1 })
	const ptp = 0x88f7
	r.Regs.Write32(ETQF0+4*5, ptp|EtqfFilter|EtqfQueueEn|3<<EtqfQueueSh)
	r.Regs.Write32(ETQF0+4*6, 0x88b5|EtqfFilter) // matched, not steered

	l2 := func(et uint16) []byte {
		f := make([]byte, 60)
		ethHdr(f, 0)
		f[12], f[13] = byte(et>>8), byte(et)
		return f
	}
	r.Inject(l2(ptp))
	_, wb, ok := r.takeRx(3)
	if !ok {
		t.Fatalf("PTP frame not on queue 3: %v", r.nic.Counters().RxQueue)
	}
	if wb.info&PktL2 == 0 || wb.info>>pktETQFSh&7 != 5 {
		t.Errorf("packet type %#x: want L2 with filter index 5", wb.info)
	}
	r.Inject(l2(0x88b5))
	if _, wb, ok = r.takeRx(0); !ok || wb.info&PktL2 == 0 || wb.info>>pktETQFSh&7 != 6 {
		t.Errorf("unsteered match: ok %v info %#x; want queue 0, L2, index 6", ok, wb.info)
	}
	// An IPv4 frame still goes by RSS, and the filter beats RSS for its
	// EtherType even when RSS could hash it.
	r.Inject(udp4(srcIP4, dstIP4, 1, 2, nil))
	if _, wb, ok = r.takeRx(1); !ok || wb.info&PktIPv4 == 0 || wb.info&PktUDP == 0 {
		t.Errorf("IPv4 frame: ok %v info %#x; want queue 1, IPv4 UDP", ok, wb.info)
	}
	r.Regs.Write32(ETQF0, 0x0800|EtqfFilter|EtqfQueueEn|2<<EtqfQueueSh)
	r.Inject(udp4(srcIP4, dstIP4, 1, 2, nil))
	if _, _, ok = r.takeRx(2); !ok {
		t.Error("ETQF for IPv4 did not override RSS")
	}
	// Disabling the filter ends the steering.
	r.Regs.Write32(ETQF0+4*5, ptp|EtqfQueueEn|3<<EtqfQueueSh)
	r.Inject(l2(ptp))
	if _, _, ok = r.takeRx(0); !ok {
		t.Error("disabled filter still steers")
	}
}

// wire16 is a port as SPQF and IMIR hold it: the first byte on the wire
// in the register's low byte.
func wire16(port uint16) uint32 { return uint32(port>>8 | port<<8&0xff00) }

// wire32 is an IPv4 address as SAQF and DAQF hold it.
func wire32(a []byte) uint32 { return binary.LittleEndian.Uint32(a) }

func TestFiveTupleFilter(t *testing.T) {
	r := newRig(t)
	for q := range uint32(8) {
		r.setupRx(q, 8, 2048)
	}
	r.programRSS(nicmodel.MrqcIPv4 | nicmodel.MrqcUDPIPv4 | nicmodel.MrqcTCPIPv4)
	r.programRETA(func(uint32) uint32 { return 0 })
	const vxlan = 4789
	anyFlow := uint32(FtqfMaskSrcAddr | FtqfMaskDstAddr | FtqfMaskSrcPort)
	// Filter 2: UDP to port 4789 from anywhere, any size, any flags, queue 5.
	r.Regs.Write32(FTQF0+4*2, uint32(header.UDPProtocolNumber)|anyFlow|FtqfQueueEn|5<<FtqfQueueSh)
	r.Regs.Write32(IMIR0+4*2, wire16(vxlan)|1<<ImirPrioSh)
	r.Regs.Write32(IMIREXT+4*2, ImirextSizeBP|ImirextCtrlBP)
	// Filter 4: any protocol to port 4789, higher priority, queue 6, but
	// only for frames under 100 bytes.
	r.Regs.Write32(FTQF0+4*4, FtqfMaskProto|anyFlow|FtqfQueueEn|6<<FtqfQueueSh)
	r.Regs.Write32(IMIR0+4*4, wire16(vxlan)|3<<ImirPrioSh)
	r.Regs.Write32(IMIREXT+4*4, 100|ImirextCtrlBP)
	// Filter 7: TCP with SYN to any port, queue 7.
	r.Regs.Write32(FTQF0+4*7, uint32(header.TCPProtocolNumber)|anyFlow|FtqfQueueEn|7<<FtqfQueueSh)
	r.Regs.Write32(IMIR0+4*7, ImirPortBP)
	r.Regs.Write32(IMIREXT+4*7, ImirextSizeBP|uint32(header.TCPFlagSyn)<<ImirextCtrlSh)
	// Filter 1: the whole 5-tuple of one UDP flow, queue 3.
	r.Regs.Write32(FTQF0+4*1, uint32(header.UDPProtocolNumber)|FtqfQueueEn|3<<FtqfQueueSh)
	r.Regs.Write32(SAQF0+4*1, wire32(srcIP4.AsSlice()))
	r.Regs.Write32(DAQF0+4*1, wire32(dstIP4.AsSlice()))
	r.Regs.Write32(SPQF0+4*1, wire16(5000))
	r.Regs.Write32(IMIR0+4*1, wire16(53)|2<<ImirPrioSh)
	r.Regs.Write32(IMIREXT+4*1, ImirextSizeBP|ImirextCtrlBP)

	cases := []struct {
		name  string
		frame []byte
		queue uint32
	}{
		{"big UDP to 4789", udp4(srcIP4, dstIP4, 1, vxlan, make([]byte, 200)), 5},
		{"small UDP to 4789", udp4(srcIP4, dstIP4, 1, vxlan, nil), 6},
		{"UDP to 4790", udp4(srcIP4, dstIP4, 1, vxlan+1, nil), 0},
		{"UDP to 46354 (4789 byte-swapped)", udp4(srcIP4, dstIP4, 1, 0xb512, make([]byte, 200)), 0},
		{"small TCP to 4789", tcp4(srcIP4, dstIP4, 1, vxlan, nil), 6},
		{"TCP ACK to 80", tcp4(srcIP4, dstIP4, 1, 80, make([]byte, 200)), 0},
		{"the 5-tuple flow", udp4(srcIP4, dstIP4, 5000, 53, nil), 3},
		{"another source port", udp4(srcIP4, dstIP4, 5001, 53, nil), 0},
		{"reversed addresses", udp4(dstIP4, srcIP4, 5000, 53, nil), 0},
	}
	for _, c := range cases {
		r.Inject(c.frame)
		if _, _, ok := r.takeRx(c.queue); !ok {
			t.Errorf("%s: not on queue %d (per queue %v)", c.name, c.queue, r.nic.Counters().RxQueue)
		}
	}
	syn := tcp4(srcIP4, dstIP4, 1, 80, nil)
	header.TCP(syn[34:]).SetFlags(uint8(header.TCPFlagSyn))
	r.Inject(syn)
	if _, _, ok := r.takeRx(7); !ok {
		t.Errorf("SYN: not on queue 7 (per queue %v)", r.nic.Counters().RxQueue)
	}
}

// A filter written as a 2-tuple (TTQF of the later parts: no address or
// source port bypass, the port in host order) compares the addresses and
// source port against SAQF, DAQF and SPQF, all zero, and the port against
// its byte-swapped value: on an 82576 it steers nothing.
func TestTwoTupleValuesSteerNothing(t *testing.T) {
	r := newRig(t)
	for q := range uint32(4) {
		r.setupRx(q, 8, 2048)
	}
	r.programRSS(nicmodel.MrqcIPv4 | nicmodel.MrqcUDPIPv4)
	r.programRETA(func(uint32) uint32 { return 0 })
	r.Regs.Write32(FTQF0, uint32(header.UDPProtocolNumber)|FtqfQueueEn|2<<FtqfQueueSh)
	r.Regs.Write32(IMIR0, 9|7<<ImirPrioSh)
	r.Regs.Write32(IMIREXT, ImirextSizeBP|ImirextCtrlBP)
	r.Inject(udp4(srcIP4, dstIP4, 40000, 9, nil))
	if _, _, ok := r.takeRx(0); !ok {
		t.Fatalf("frame not left to RSS (queue 0): per queue %v", r.nic.Counters().RxQueue)
	}
	// The same filter with the flow fields bypassed and the port as on the
	// wire steers.
	r.Regs.Write32(FTQF0, uint32(header.UDPProtocolNumber)|FtqfMaskSrcAddr|FtqfMaskDstAddr|FtqfMaskSrcPort|FtqfQueueEn|2<<FtqfQueueSh)
	r.Regs.Write32(IMIR0, wire16(9)|7<<ImirPrioSh)
	r.Inject(udp4(srcIP4, dstIP4, 40000, 9, nil))
	if _, _, ok := r.takeRx(2); !ok {
		t.Fatalf("frame not steered to queue 2: per queue %v", r.nic.Counters().RxQueue)
	}
}

func TestAddressAndVLANFilters(t *testing.T) {
	r := newRig(t)
	r.setupRx(0, 16, 2048)
	g := r.Regs
	other := udp4(srcIP4, dstIP4, 1, 2, nil)
	other[5] = 0x99
	r.Inject(other)
	if r.nic.Counters().RxFiltered != 1 {
		t.Error("frame to another address accepted")
	}
	// A second exact address in RAR 17.
	g.Write32(RAL16+8, uint32(other[0])|uint32(other[1])<<8|uint32(other[2])<<16|uint32(other[3])<<24)
	g.Write32(RAL16+12, uint32(other[4])|uint32(other[5])<<8|nicmodel.RahAV)
	r.Inject(other)
	if _, _, ok := r.takeRx(0); !ok {
		t.Error("frame to RAR 17 dropped")
	}
	mc := udp4(srcIP4, dstIP4, 1, 2, nil)
	copy(mc, []byte{0x01, 0x00, 0x5e, 0x00, 0x00, 0xfb})
	r.Inject(mc)
	if r.nic.Counters().RxFiltered != 2 {
		t.Error("multicast accepted with an empty MTA")
	}
	h := (uint32(mc[4])>>4 | uint32(mc[5])<<4) & 0xfff // RCTL.MO 0: address bits 47:36
	g.Write32(nicmodel.MTA+4*(h>>5), 1<<(h&31))
	r.Inject(mc)
	if _, _, ok := r.takeRx(0); !ok {
		t.Error("multicast in the MTA dropped")
	}
	if g.Read32(nicmodel.MPRC) != 1 {
		t.Error("MPRC not counted")
	}

	// VLAN: tagged frames pass the VFTA when VFE is on, and the tag is
	// stripped into the write-back with CTRL.VME.
	tagged := make([]byte, 0, 80)
	plain := udp4(srcIP4, dstIP4, 1, 2, make([]byte, 20))
	tagged = append(append(append(tagged, plain[:12]...), 0x81, 0x00, 0x20, 0x05), plain[12:]...)
	g.Write32(nicmodel.RCTL, g.Read32(nicmodel.RCTL)|nicmodel.RctlVFE)
	r.Inject(tagged)
	if r.nic.Counters().RxFiltered != 3 {
		t.Error("tagged frame for VLAN 5 accepted with an empty VFTA")
	}
	g.Write32(nicmodel.VFTA, 1<<5)
	g.Write32(nicmodel.CTRL, g.Read32(nicmodel.CTRL)|nicmodel.CtrlVME)
	r.Inject(tagged)
	got, wb, ok := r.takeRx(0)
	if !ok {
		t.Fatal("tagged frame dropped")
	}
	if wb.vlan != 0x2005 || wb.stErr&RxdVP == 0 || string(got) != string(plain) {
		t.Errorf("vlan %#x status %#x, stripped %v", wb.vlan, wb.stErr, string(got) == string(plain))
	}
}

// In VMDq mode a unicast frame goes to the queue of the pool its
// receive address entry selects (RAH.POOLSEL); others to pool 0.
func TestVMDqPoolSelect(t *testing.T) {
	r := newRig(t)
	r.setupRx(0, 8, 2048)
	r.setupRx(2, 8, 2048)
	g := r.Regs
	vm := [6]byte{0x02, 0, 0, 0, 0, 0x42}
	g.Write32(nicmodel.RAL0+8, uint32(vm[0])|uint32(vm[1])<<8|uint32(vm[2])<<16|uint32(vm[3])<<24)
	g.Write32(nicmodel.RAL0+12, uint32(vm[4])|uint32(vm[5])<<8|nicmodel.RahAV|1<<2<<RahPoolSh)
	g.Write32(nicmodel.MRQC, MrqcVMDq)
	f := udp4(srcIP4, dstIP4, 1, 2, nil)
	copy(f, vm[:])
	r.Inject(f)
	if _, _, ok := r.takeRx(2); !ok {
		t.Errorf("frame for pool 2 not on queue 2: %v", r.nic.Counters().RxQueue)
	}
	r.Inject(udp4(srcIP4, dstIP4, 1, 2, nil)) // RAR 0, no pool bits
	if _, _, ok := r.takeRx(0); !ok {
		t.Errorf("frame for RAR 0 not on queue 0: %v", r.nic.Counters().RxQueue)
	}
}
