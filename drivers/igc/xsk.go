package igc

import (
	"errors"
)

// A queue taken over by a socket. In zero-copy mode the RX ring is armed
// with the socket's frames and a frame stays in the application's buffer:
// it is neither built around nor constructed from, the device writes it at
// the frame's start and the program and the socket see it there. In copy
// mode the ring keeps its own buffers and, a program being attached (the
// socket's default redirects everything), constructs.

// ReleaseRx implements xsk.Hw: it gives up every buffer of the ring's
// own, kept chunk mappings included; the stack keeps the views it holds.
func (q *queue) ReleaseRx() error {
	r := q.rx
	errs := []error{r.reset(Construct)}
	for i := range r.slots {
		errs = append(errs, r.giveUp(&r.slots[i]))
	}
	return errors.Join(errs...)
}
