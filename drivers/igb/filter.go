package igb

import (
	"fmt"
	"math/bits"

	"github.com/ether9/ether9/drivers/adv"
	"github.com/ether9/ether9/drivers/xsk"
)

const (
	protoUDP = 17

	// Steering filter slots returned by Steer: EtherType filters first,
	// then 2-tuple filters.
	slotTwoTuple = adv.NumETQF
)

// tupleFilter is the queue filter register at TTQF's offset: the 82576's
// 5-tuple FTQF, the later parts' 2-tuple TTQF.
func tupleFilter(t MACType) uint32 {
	if t == Mac82576 {
		return FTQF
	}
	return adv.TTQF
}

// portOnly is, per MAC type, what the queue filter register needs beyond
// protocol, queue and enable so that it compares protocol and destination
// port alone.
var portOnly = map[MACType]uint32{
	Mac82576: FTQF_MASK_SOURCE_ADDR_BP | FTQF_MASK_DEST_ADDR_BP | FTQF_MASK_SOURCE_PORT_BP,
}

// imirPort is the IMIR destination port field for port: the port as it
// appears on the wire, its first byte in the register's low byte.
func imirPort(port uint16) uint32 { return uint32(bits.ReverseBytes16(port)) }

// Steer implements xsk.Binder: an EtherType filter (ETQF) or a UDP
// destination port filter (TTQF, or the 82576's FTQF with its address and
// source port bypassed; IMIR, IMIREXT) sends matching frames to queue q
// ahead of RSS.
//
// QEMU's igb (hw/net/igb_core.c, QEMU 10.0) implements neither: outside
// VMDq mode igb_receive_assign picks the queue with
// "queues = BIT(rss_info->queue);" alone; its ETQF loop only records the
// matching filter's index for the descriptor's packet type and the 1588
// timestamp, and TTQF, IMIR and IMIREXT have no entry in
// igb_macreg_writeops, so their writes are discarded. Both filters are
// accepted there and steer nothing; only RSS places a flow on a queue
// (boot/init/xdp.go picks a source port by its Toeplitz hash).
func (d *Device) Steer(f xsk.Filter, q int) (int, error) {
	if q < 0 || q >= len(d.queues) {
		return -1, fmt.Errorf("igb %s: steer %v to queue %d: %w", d.Core.Name, f, q, xsk.ErrNoQueue)
	}
	if (f.EtherType == 0) == (f.UDPPort == 0) {
		return -1, fmt.Errorf("igb %s: steer: set exactly one of EtherType and UDP port", d.Core.Name)
	}
	d.FilterMu.Lock()
	defer d.FilterMu.Unlock()
	r := d.Core.Regs
	if f.EtherType != 0 {
		if d.info.Flags&FlagETQF == 0 {
			return -1, fmt.Errorf("igb %s: %v has no EtherType filters", d.Core.Name, d.info.Type)
		}
		for i := range d.etqf {
			if !d.etqf[i] {
				d.etqf[i] = true
				r.Write32(adv.ETQF+uint32(4*i), uint32(f.EtherType)|uint32(q)<<adv.ETQF_QUEUE_SHIFT&adv.ETQF_QUEUE_MASK|adv.ETQF_FILTER_ENABLE|adv.ETQF_QUEUE_ENABLE)
				return i, nil
			}
		}
		return -1, fmt.Errorf("igb %s: steer %v: all %d EtherType filters in use", d.Core.Name, f, adv.NumETQF)
	}
	if d.info.Flags&FlagPortFilter == 0 {
		return -1, fmt.Errorf("igb %s: %v has no destination-port queue filters", d.Core.Name, d.info.Type)
	}
	for i := range d.ttqf {
		if !d.ttqf[i] {
			d.ttqf[i] = true
			off := uint32(4 * i)
			r.Write32(adv.IMIR+off, imirPort(f.UDPPort)|7<<adv.IMIR_PRIORITY_SHIFT)
			r.Write32(adv.IMIREXT+off, adv.IMIREXT_SIZE_BP|adv.IMIREXT_CTRL_BP)
			r.Write32(tupleFilter(d.info.Type)+off, protoUDP|portOnly[d.info.Type]|adv.TTQF_QUEUE_ENABLE|uint32(q)<<adv.TTQF_QUEUE_SHIFT&adv.TTQF_QUEUE_MASK)
			return slotTwoTuple + i, nil
		}
	}
	return -1, fmt.Errorf("igb %s: steer %v: all %d 2-tuple filters in use", d.Core.Name, f, adv.NumIMIR)
}

// Unsteer implements xsk.Binder.
func (d *Device) Unsteer(slot int) error {
	d.FilterMu.Lock()
	defer d.FilterMu.Unlock()
	switch {
	case slot >= 0 && slot < adv.NumETQF && d.etqf[slot]:
		d.etqf[slot] = false
		d.Core.Regs.Write32(adv.ETQF+uint32(4*slot), 0)
	case slot >= slotTwoTuple && slot < slotTwoTuple+adv.NumIMIR && d.ttqf[slot-slotTwoTuple]:
		i := slot - slotTwoTuple
		d.ttqf[i] = false
		off := uint32(4 * i)
		d.Core.Regs.Write32(tupleFilter(d.info.Type)+off, 0)
		d.Core.Regs.Write32(adv.IMIR+off, 0)
		d.Core.Regs.Write32(adv.IMIREXT+off, 0)
	default:
		return fmt.Errorf("igb %s: unsteer: filter slot %d not in use", d.Core.Name, slot)
	}
	return nil
}
