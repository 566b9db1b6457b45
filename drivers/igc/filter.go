package igc

import (
	"fmt"

	"github.com/ether9/ether9/drivers/xsk"
)

// EtherType queue filters (I225 datasheet 8.11, ETQF[n]): a frame whose
// EtherType matches goes to the filter's queue ahead of RSS.
const (
	ETQF      = 0x05cb0 // 8 registers, one per filter
	etqfCount = 8

	ETQF_ETYPE_MASK    = 0xffff
	ETQF_QUEUE_SHIFT   = 16
	ETQF_QUEUE_MASK    = 7 << ETQF_QUEUE_SHIFT
	ETQF_FILTER_ENABLE = 1 << 26
	ETQF_QUEUE_ENABLE  = 1 << 31
)

// Steer implements xsk.Binder with an EtherType filter: frames of
// EtherType f.EtherType go to queue q ahead of RSS. It returns the filter
// slot for Unsteer.
//
// The I225 has no 2-tuple (protocol and destination port) filter: the
// I210's TTQF is gone, and a port can only be matched through a flexible
// byte filter. A UDP-port Filter is refused.
func (d *Device) Steer(f xsk.Filter, q int) (int, error) {
	if q < 0 || q >= len(d.queues) {
		return -1, fmt.Errorf("igc %s: steer %v to queue %d of %d: %w", d.name, f, q, len(d.queues), xsk.ErrNoQueue)
	}
	if (f.EtherType == 0) == (f.UDPPort == 0) {
		return -1, fmt.Errorf("igc %s: steer: set exactly one of EtherType and UDP port", d.name)
	}
	if f.UDPPort != 0 {
		return -1, fmt.Errorf("igc %s: steer %v: the I225 has no UDP port (2-tuple) queue filter, only EtherType filters", d.name, f)
	}
	d.filterMu.Lock()
	defer d.filterMu.Unlock()
	if d.closed.Load() {
		return -1, fmt.Errorf("igc %s: steer %v: device closed", d.name, f)
	}
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

// Unsteer implements xsk.Binder.
func (d *Device) Unsteer(slot int) error {
	d.filterMu.Lock()
	defer d.filterMu.Unlock()
	if slot < 0 || slot >= etqfCount || d.regs.Read32(etqf(slot))&ETQF_FILTER_ENABLE == 0 {
		return fmt.Errorf("igc %s: unsteer: filter slot %d not in use", d.name, slot)
	}
	d.regs.Write32(etqf(slot), 0)
	return nil
}

func etqf(i int) uint32 { return ETQF + uint32(4*i) }
