package adv

// The receive side: the descriptor-cleaning loop.

import "github.com/ether9/ether9/drivers/ring"

// RxCursor is the position a receive loop walks: a ring's ring.Cursor,
// or a socket queue's while its frames are armed.
type RxCursor interface {
	Armed() int
	Clean() int
	Advance()
}

// CleanRx is the receive loop over up to budget descriptors the device
// completed, from c's clean index: a frame spanning buffers is dropped
// through its EOP (discard carries that across calls), a frame with
// error bits is dropped, a good frame goes to frame. drop and frame see
// the descriptor at Clean; CleanRx then clears its write-back, so a stale
// DD is never read again, and advances c. It returns the descriptors
// taken.
func CleanRx(descs *ring.Descs, c RxCursor, budget int, discard *bool, drop func(ring.DropReason), frame func(Rx)) int {
	handled := 0
	for handled < budget && c.Armed() > 0 {
		desc := descs.At(c.Clean())
		if !RxDone(desc) {
			break
		}
		wb := DecodeRx(desc)
		switch {
		case *discard:
			drop(ring.DropMulti)
			if wb.EOP() {
				*discard = false
			}
		case !wb.EOP():
			// Frames must fit one buffer; drop this one through its EOP.
			drop(ring.DropMulti)
			*discard = true
		case wb.FrameError():
			drop(ring.DropErrorBits)
		default:
			frame(wb)
		}
		EncodeRxRead(desc, 0)
		c.Advance()
		handled++
	}
	return handled
}
