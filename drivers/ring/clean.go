package ring

import "encoding/binary"

// RxCursor is the position a receive loop walks: a ring's Cursor, or a
// socket queue's while its frames are armed.
type RxCursor interface {
	Armed() int
	Clean() int
	Advance()
}

// The write-back the clean loop reads, as the 82574's extended receive
// descriptor (82574 datasheet 7.1.4.2) and the advanced one of the 82576
// and I225 (82576 datasheet 7.1.5.2, I225 7.1.4.2) both lay it out: 16
// bytes, the extended status (19:0) and errors (31:20) in dword 2, with
// DD at bit 0 and EOP at bit 1. Rewriting all 16 bytes with zeros is the
// read format with a zero address in both, which also clears DD.
const (
	rxStatErrOff = 8
	rxStatDD     = 1 << 0
	rxStatEOP    = 1 << 1
)

// RxWaiting reports whether the device has written back the descriptor
// at c's clean index: what a spinning poll loop asks between yields
// (nic.RxReadier) instead of receiving, from ring memory alone, so that
// no register access holds up an emulated device.
func RxWaiting(descs *Descs, c RxCursor) bool {
	return c.Armed() > 0 && binary.LittleEndian.Uint32(descs.At(c.Clean())[rxStatErrOff:])&rxStatDD != 0
}

// CleanRx is the receive loop all three drivers share, over up to budget
// descriptors the device completed, from c's clean index: a frame
// spanning buffers is dropped through its EOP (discard carries that
// across calls), a frame with any of frameErrors set in its status and
// errors dword is dropped, a good frame's descriptor goes to frame,
// which decodes what else it needs. drop and frame see the descriptor at
// Clean; CleanRx then clears the write-back, so a stale DD is never read
// again, and advances c. It returns the descriptors taken.
func CleanRx(descs *Descs, c RxCursor, frameErrors uint32, budget int, discard *bool, drop func(DropReason), frame func(desc []byte)) int {
	handled := 0
	for handled < budget && c.Armed() > 0 {
		desc := descs.At(c.Clean())
		staterr := binary.LittleEndian.Uint32(desc[rxStatErrOff:])
		if staterr&rxStatDD == 0 {
			break
		}
		eop := staterr&rxStatEOP != 0
		switch {
		case *discard:
			drop(DropMulti)
			if eop {
				*discard = false
			}
		case !eop:
			// Frames must fit one buffer; drop this one through its EOP.
			drop(DropMulti)
			*discard = true
		case staterr&frameErrors != 0:
			drop(DropErrorBits)
		default:
			frame(desc)
		}
		clear(desc[:16])
		c.Advance()
		handled++
	}
	return handled
}
