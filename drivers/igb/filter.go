package igb

import (
	"fmt"

	"github.com/ether9/ether9/drivers/xsk"
)

const (
	protoUDP = 17

	// Steering filter slots returned by Steer: EtherType filters first,
	// then 2-tuple filters.
	slotTwoTuple = etqfCount
)

// Steer implements xsk.Binder: an EtherType filter (ETQF) or a UDP
// destination port 2-tuple filter (TTQF, IMIR, IMIREXT) sends matching
// frames to queue q ahead of RSS, as the 82576 datasheet describes.
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
		return -1, fmt.Errorf("igb %s: steer %v to queue %d: %w", d.name, f, q, xsk.ErrNoQueue)
	}
	if (f.EtherType == 0) == (f.UDPPort == 0) {
		return -1, fmt.Errorf("igb %s: steer: set exactly one of EtherType and UDP port", d.name)
	}
	d.filterMu.Lock()
	defer d.filterMu.Unlock()
	r := d.regs
	if f.EtherType != 0 {
		if d.info.Flags&FlagETQF == 0 {
			return -1, fmt.Errorf("igb %s: %v has no EtherType filters", d.name, d.info.Type)
		}
		for i := range d.etqf {
			if !d.etqf[i] {
				d.etqf[i] = true
				r.Write32(ETQF+uint32(4*i), uint32(f.EtherType)|uint32(q)<<ETQF_QUEUE_SHIFT&ETQF_QUEUE_MASK|ETQF_FILTER_ENABLE|ETQF_QUEUE_ENABLE)
				return i, nil
			}
		}
		return -1, fmt.Errorf("igb %s: steer %v: all %d EtherType filters in use", d.name, f, etqfCount)
	}
	if d.info.Flags&FlagTwoTuple == 0 {
		return -1, fmt.Errorf("igb %s: %v has no 2-tuple filters", d.name, d.info.Type)
	}
	for i := range d.ttqf {
		if !d.ttqf[i] {
			d.ttqf[i] = true
			off := uint32(4 * i)
			r.Write32(IMIR+off, uint32(f.UDPPort)|7<<IMIR_PRIORITY_SHIFT)
			r.Write32(IMIREXT+off, IMIREXT_SIZE_BP|IMIREXT_CTRL_BP)
			r.Write32(TTQF+off, protoUDP|TTQF_QUEUE_ENABLE|uint32(q)<<TTQF_QUEUE_SHIFT&TTQF_QUEUE_MASK)
			return slotTwoTuple + i, nil
		}
	}
	return -1, fmt.Errorf("igb %s: steer %v: all %d 2-tuple filters in use", d.name, f, ttqfCount)
}

// Unsteer implements xsk.Binder.
func (d *Device) Unsteer(slot int) error {
	d.filterMu.Lock()
	defer d.filterMu.Unlock()
	switch {
	case slot >= 0 && slot < etqfCount && d.etqf[slot]:
		d.etqf[slot] = false
		d.regs.Write32(ETQF+uint32(4*slot), 0)
	case slot >= slotTwoTuple && slot < slotTwoTuple+ttqfCount && d.ttqf[slot-slotTwoTuple]:
		i := slot - slotTwoTuple
		d.ttqf[i] = false
		off := uint32(4 * i)
		d.regs.Write32(TTQF+off, 0)
		d.regs.Write32(IMIR+off, 0)
		d.regs.Write32(IMIREXT+off, 0)
	default:
		return fmt.Errorf("igb %s: unsteer: filter slot %d not in use", d.name, slot)
	}
	return nil
}
