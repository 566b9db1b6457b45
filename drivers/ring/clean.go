package ring

// RxCursor is the position a receive loop walks: a ring's Cursor, or a
// socket queue's while its frames are armed.
type RxCursor interface {
	Armed() int
	Clean() int
	Advance()
}

// RxWriteback is what the clean loop asks of a decoded receive
// write-back, whatever the descriptor format.
type RxWriteback interface {
	EOP() bool
	FrameError() bool // errors that make the frame itself bad
}

// RxFormat is one receive descriptor format: the 82574's extended
// descriptors or the advanced ones of the 82576 and I225.
type RxFormat[W RxWriteback] interface {
	// Decode reads a write-back; done is false while the device has
	// not written it (DD clear).
	Decode(desc []byte) (wb W, done bool)
	// Clear overwrites a taken write-back so a stale DD is never read
	// again.
	Clear(desc []byte)
}

// CleanRx is the receive loop all three drivers share, over up to budget
// descriptors the device completed, from c's clean index: a frame
// spanning buffers is dropped through its EOP (discard carries that
// across calls), a frame with error bits is dropped, a good frame goes
// to frame. drop and frame see the descriptor at Clean; CleanRx then
// clears its write-back and advances c. It returns the descriptors
// taken.
func CleanRx[W RxWriteback, F RxFormat[W]](descs *Descs, c RxCursor, f F, budget int, discard *bool, drop func(DropReason), frame func(W)) int {
	handled := 0
	for handled < budget && c.Armed() > 0 {
		desc := descs.At(c.Clean())
		wb, done := f.Decode(desc)
		if !done {
			break
		}
		switch {
		case *discard:
			drop(DropMulti)
			if wb.EOP() {
				*discard = false
			}
		case !wb.EOP():
			// Frames must fit one buffer; drop this one through its EOP.
			drop(DropMulti)
			*discard = true
		case wb.FrameError():
			drop(DropErrorBits)
		default:
			frame(wb)
		}
		f.Clear(desc)
		c.Advance()
		handled++
	}
	return handled
}
