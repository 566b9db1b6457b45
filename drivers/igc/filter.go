package igc

import (
	"fmt"
	"math/bits"

	"github.com/ether9/ether9/drivers/xsk"
)

// Receive queue filters. The device places a frame by the MAC address
// filters' queue selection first, then the EtherType filters, then the
// 2-tuple filters, and only then by RSS.

// EtherType queue filters, ETQF[n].
const (
	ETQF      = 0x05cb0 // + 4n
	etqfCount = 8

	ETQF_ETYPE_MASK    = 0xffff
	ETQF_QUEUE_SHIFT   = 16
	ETQF_QUEUE_MASK    = 7 << ETQF_QUEUE_SHIFT
	ETQF_FILTER_ENABLE = 1 << 26
	ETQF_QUEUE_ENABLE  = 1 << 31
)

// 2-tuple queue filters: TTQF[n] holds the IP protocol and the queue,
// IMIR[n] the destination port and priority, IMIREXT[n] the length and
// TCP flag conditions, each with a bypass. TTQF's mask bits are written
// set but for bit 28, so that the protocol is compared.
const (
	TTQF      = 0x059e0 // + 4n
	IMIR      = 0x05a80 // + 4n
	IMIREXT   = 0x05aa0 // + 4n
	ttqfCount = 8

	TTQF_QUEUE_ENABLE = 1 << 8
	TTQF_QUEUE_SHIFT  = 16
	TTQF_QUEUE_MASK   = 7 << TTQF_QUEUE_SHIFT
	TTQF_DISABLE_MASK = 0xf0008000
	TTQF_MASK_PROTO   = 1 << 28 // set: the protocol is not compared

	IMIR_PORT_BP        = 1 << 16
	IMIR_PRIORITY_SHIFT = 29
	IMIREXT_SIZE_BP     = 1 << 12
	IMIREXT_CTRL_BP     = 1 << 19

	protoUDP = 17

	// Steer's slots: EtherType filters first, then 2-tuple filters.
	slotTwoTuple = etqfCount
)

// imirPort is the IMIR destination port field for port: the port as it
// appears on the wire, its first byte in the register's low byte.
func imirPort(port uint16) uint32 { return uint32(bits.ReverseBytes16(port)) }

func etqf(i int) uint32 { return ETQF + uint32(4*i) }

// Steer implements xsk.Binder: an EtherType filter (ETQF) or a UDP
// destination port filter (a 2-tuple filter comparing protocol and port)
// sends matching frames to queue q ahead of RSS. It returns the filter
// slot for Unsteer.
func (d *Device) Steer(f xsk.Filter, q int) (int, error) {
	if q < 0 || q >= len(d.queues) {
		return -1, fmt.Errorf("igc %s: steer %v to queue %d of %d: %w", d.name, f, q, len(d.queues), xsk.ErrNoQueue)
	}
	if (f.EtherType == 0) == (f.UDPPort == 0) {
		return -1, fmt.Errorf("igc %s: steer: set exactly one of EtherType and UDP port", d.name)
	}
	d.filterMu.Lock()
	defer d.filterMu.Unlock()
	if d.closed.Load() {
		return -1, fmt.Errorf("igc %s: steer %v: device closed", d.name, f)
	}
	if f.EtherType != 0 {
		return d.steerEtherType(f, q)
	}
	return d.steerUDPPort(f, q)
}

func (d *Device) steerEtherType(f xsk.Filter, q int) (int, error) {
	free := -1
	for i := etqfCount - 1; i >= 0; i-- {
		v := d.regs.Read32(etqf(i))
		if v&ETQF_FILTER_ENABLE == 0 {
			free = i
			continue
		}
		if uint16(v&ETQF_ETYPE_MASK) == f.EtherType {
			return -1, fmt.Errorf("igc %s: steer %v: filter %d already steers it to queue %d", d.name, f, i, v&ETQF_QUEUE_MASK>>ETQF_QUEUE_SHIFT)
		}
	}
	if free < 0 {
		return -1, fmt.Errorf("igc %s: steer %v: all %d EtherType filters in use", d.name, f, etqfCount)
	}
	d.regs.Write32(etqf(free), uint32(f.EtherType)|uint32(q)<<ETQF_QUEUE_SHIFT&ETQF_QUEUE_MASK|ETQF_QUEUE_ENABLE|ETQF_FILTER_ENABLE)
	return free, nil
}

func (d *Device) steerUDPPort(f xsk.Filter, q int) (int, error) {
	r := d.regs
	free := -1
	for i := ttqfCount - 1; i >= 0; i-- {
		off := uint32(4 * i)
		if r.Read32(TTQF+off)&TTQF_QUEUE_ENABLE == 0 {
			free = i
			continue
		}
		if r.Read32(IMIR+off)&0xffff == imirPort(f.UDPPort) {
			return -1, fmt.Errorf("igc %s: steer %v: filter %d already steers it", d.name, f, slotTwoTuple+i)
		}
	}
	if free < 0 {
		return -1, fmt.Errorf("igc %s: steer %v: all %d 2-tuple filters in use", d.name, f, ttqfCount)
	}
	off := uint32(4 * free)
	r.Write32(IMIR+off, imirPort(f.UDPPort)|7<<IMIR_PRIORITY_SHIFT)
	r.Write32(IMIREXT+off, IMIREXT_SIZE_BP|IMIREXT_CTRL_BP)
	r.Write32(TTQF+off, protoUDP|TTQF_DISABLE_MASK&^TTQF_MASK_PROTO|TTQF_QUEUE_ENABLE|uint32(q)<<TTQF_QUEUE_SHIFT&TTQF_QUEUE_MASK)
	return slotTwoTuple + free, nil
}

// Unsteer implements xsk.Binder.
func (d *Device) Unsteer(slot int) error {
	d.filterMu.Lock()
	defer d.filterMu.Unlock()
	r := d.regs
	switch {
	case slot >= 0 && slot < etqfCount && r.Read32(etqf(slot))&ETQF_FILTER_ENABLE != 0:
		r.Write32(etqf(slot), 0)
	case slot >= slotTwoTuple && slot < slotTwoTuple+ttqfCount && r.Read32(TTQF+uint32(4*(slot-slotTwoTuple)))&TTQF_QUEUE_ENABLE != 0:
		off := uint32(4 * (slot - slotTwoTuple))
		r.Write32(TTQF+off, TTQF_DISABLE_MASK)
		r.Write32(IMIR+off, 0)
		r.Write32(IMIREXT+off, 0)
	default:
		return fmt.Errorf("igc %s: unsteer: filter slot %d not in use", d.name, slot)
	}
	return nil
}
