package igc

import (
	"fmt"
	"math/bits"

	"github.com/ether9/ether9/drivers/adv"
	"github.com/ether9/ether9/drivers/xsk"
)

// Receive queue filters. The device places a frame by the MAC address
// filters' queue selection first, then the EtherType filters, then the
// 2-tuple filters, and only then by RSS.

// 2-tuple queue filters (adv.TTQF, IMIR, IMIREXT): the I225 wants a
// disabled TTQF's mask bits set; an enabled one keeps them set but for
// bit 28, so that the protocol is compared.
const (
	TTQF_DISABLE_MASK = 0xf0008000

	protoUDP = 17

	// Steer's slots: EtherType filters first, then 2-tuple filters.
	slotTwoTuple = adv.NumETQF
)

// imirPort is the IMIR destination port field for port: the port as it
// appears on the wire, its first byte in the register's low byte.
func imirPort(port uint16) uint32 { return uint32(bits.ReverseBytes16(port)) }

func etqf(i int) uint32 { return adv.ETQF + uint32(4*i) }

// Steer implements xsk.Binder: an EtherType filter (ETQF) or a UDP
// destination port filter (a 2-tuple filter comparing protocol and port)
// sends matching frames to queue q ahead of RSS. It returns the filter
// slot for Unsteer.
func (d *Device) Steer(f xsk.Filter, q int) (int, error) {
	if q < 0 || q >= len(d.queues) {
		return -1, fmt.Errorf("igc %s: steer %v to queue %d of %d: %w", d.Core.Name, f, q, len(d.queues), xsk.ErrNoQueue)
	}
	if (f.EtherType == 0) == (f.UDPPort == 0) {
		return -1, fmt.Errorf("igc %s: steer: set exactly one of EtherType and UDP port", d.Core.Name)
	}
	d.FilterMu.Lock()
	defer d.FilterMu.Unlock()
	if d.Closed.Load() {
		return -1, fmt.Errorf("igc %s: steer %v: device closed", d.Core.Name, f)
	}
	if f.EtherType != 0 {
		return d.steerEtherType(f, q)
	}
	return d.steerUDPPort(f, q)
}

func (d *Device) steerEtherType(f xsk.Filter, q int) (int, error) {
	free := -1
	for i := adv.NumETQF - 1; i >= 0; i-- {
		v := d.Core.Regs.Read32(etqf(i))
		if v&adv.ETQF_FILTER_ENABLE == 0 {
			free = i
			continue
		}
		if uint16(v&adv.ETQF_ETYPE_MASK) == f.EtherType {
			return -1, fmt.Errorf("igc %s: steer %v: filter %d already steers it to queue %d", d.Core.Name, f, i, v&adv.ETQF_QUEUE_MASK>>adv.ETQF_QUEUE_SHIFT)
		}
	}
	if free < 0 {
		return -1, fmt.Errorf("igc %s: steer %v: all %d EtherType filters in use", d.Core.Name, f, adv.NumETQF)
	}
	d.Core.Regs.Write32(etqf(free), uint32(f.EtherType)|uint32(q)<<adv.ETQF_QUEUE_SHIFT&adv.ETQF_QUEUE_MASK|adv.ETQF_QUEUE_ENABLE|adv.ETQF_FILTER_ENABLE)
	return free, nil
}

func (d *Device) steerUDPPort(f xsk.Filter, q int) (int, error) {
	r := d.Core.Regs
	free := -1
	for i := adv.NumIMIR - 1; i >= 0; i-- {
		off := uint32(4 * i)
		if r.Read32(adv.TTQF+off)&adv.TTQF_QUEUE_ENABLE == 0 {
			free = i
			continue
		}
		if r.Read32(adv.IMIR+off)&0xffff == imirPort(f.UDPPort) {
			return -1, fmt.Errorf("igc %s: steer %v: filter %d already steers it", d.Core.Name, f, slotTwoTuple+i)
		}
	}
	if free < 0 {
		return -1, fmt.Errorf("igc %s: steer %v: all %d 2-tuple filters in use", d.Core.Name, f, adv.NumIMIR)
	}
	off := uint32(4 * free)
	r.Write32(adv.IMIR+off, imirPort(f.UDPPort)|7<<adv.IMIR_PRIORITY_SHIFT)
	r.Write32(adv.IMIREXT+off, adv.IMIREXT_SIZE_BP|adv.IMIREXT_CTRL_BP)
	r.Write32(adv.TTQF+off, protoUDP|TTQF_DISABLE_MASK&^adv.TTQF_MASK_PROTO|adv.TTQF_QUEUE_ENABLE|uint32(q)<<adv.TTQF_QUEUE_SHIFT&adv.TTQF_QUEUE_MASK)
	return slotTwoTuple + free, nil
}

// Unsteer implements xsk.Binder.
func (d *Device) Unsteer(slot int) error {
	d.FilterMu.Lock()
	defer d.FilterMu.Unlock()
	r := d.Core.Regs
	switch {
	case slot >= 0 && slot < adv.NumETQF && r.Read32(etqf(slot))&adv.ETQF_FILTER_ENABLE != 0:
		r.Write32(etqf(slot), 0)
	case slot >= slotTwoTuple && slot < slotTwoTuple+adv.NumIMIR && r.Read32(adv.TTQF+uint32(4*(slot-slotTwoTuple)))&adv.TTQF_QUEUE_ENABLE != 0:
		off := uint32(4 * (slot - slotTwoTuple))
		r.Write32(adv.TTQF+off, TTQF_DISABLE_MASK)
		r.Write32(adv.IMIR+off, 0)
		r.Write32(adv.IMIREXT+off, 0)
	default:
		return fmt.Errorf("igc %s: unsteer: filter slot %d not in use", d.Core.Name, slot)
	}
	return nil
}
