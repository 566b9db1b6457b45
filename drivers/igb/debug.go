package igb

import (
	"fmt"

	"github.com/ether9/ether9/drivers/ring"
	"github.com/ether9/ether9/kernel"
)

// debugCtl runs a debug command:
//
//	inject-unmapped-rx   arm the next RX descriptor queue 0 refills (the
//	                     queue frames RSS does not hash land on) with an
//	                     IOVA the domain does not map: the device's write
//	                     of the frame there faults, and the driver must
//	                     drop the frame (ring.FaultGuard) and carry on
func (d *Device) debugCtl(arg string) error {
	if arg != "inject-unmapped-rx" {
		return fmt.Errorf("igb %s: debug %q: want inject-unmapped-rx", d.name, arg)
	}
	q := d.queues[0]
	q.rxMu.Lock()
	defer q.rxMu.Unlock()
	switch {
	case d.closed.Load() || q.stopped:
		return fmt.Errorf("igb %s: debug inject-unmapped-rx: device closed", d.name)
	case q.x.ZeroCopy():
		return fmt.Errorf("igb %s: debug inject-unmapped-rx: queue 0 holds a socket's frames", d.name)
	case q.inject != nil:
		return fmt.Errorf("igb %s: debug inject-unmapped-rx: one is already in flight", d.name)
	}
	h, err := ring.NewRxHole(d.dma, kernel.PageSize)
	if err != nil {
		return fmt.Errorf("igb %s: debug inject-unmapped-rx: %w", d.name, err)
	}
	q.inject = h
	return nil
}

// armRx is writeRx for a refill while an injection waits for its
// descriptor. rxMu is held.
func (q *queue) armRx(i int, addr kernel.DMAAddr) {
	a, armed := q.inject.Arm(i, addr)
	q.writeRx(i, a)
	if armed {
		q.d.logf("%s: debug: rx descriptor %d armed with unmapped iova %#x", q.d.name, i, uint64(a))
	}
}

// cleanedInject ends the injection once the clean loop, which took n
// descriptors from start, took its descriptor back: the device is done
// with the hole. rxMu is held.
func (q *queue) cleanedInject(start, n int) {
	if !q.inject.Cleaned(start, n, q.rx.Descs.Len()) {
		return
	}
	if err := q.inject.Release(); err != nil {
		q.d.logf("%s: debug: %v", q.d.name, err)
		// Leaked, never reused: safer than a wrong free.
	}
	q.inject = nil
}

// closeInject gives back a hole still reserved when the queue stops.
// rxMu is held.
func (q *queue) closeInject() error {
	h := q.inject
	if h == nil {
		return nil
	}
	q.inject = nil
	return h.Release()
}
