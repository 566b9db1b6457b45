package m82576

import (
	"encoding/binary"
	"testing"

	"github.com/ether9/ether9/kernel/sim/nicmodel"
)

// FuzzModel drives the model with arbitrary register writes, frames and
// link changes after a valid set-up: whatever software does, the model
// must not panic (it runs inside PID 1) and must keep its invariants.
func FuzzModel(f *testing.F) {
	f.Add([]byte{0, 0x00, 0x01, 1, 2, 3, 4, 1, 60, 0, 2})
	f.Add([]byte{0, 0x38, 0x06, 0xff, 0xff, 0, 0, 0, 0x18, 0xe0, 1, 0, 0, 0, 1, 200, 1})
	f.Fuzz(func(t *testing.T, ops []byte) {
		r := newRig(t)
		r.setupRx(0, 8, 1024)
		r.setupRx(1, 8, 2048)
		r.setupTx(0, 8)
		r.programRSS(nicmodel.MrqcTCPIPv4 | nicmodel.MrqcUDPIPv4 | nicmodel.MrqcIPv4)
		frame := udp4(srcIP4, dstIP4, 1, 2, make([]byte, 1200))
		for len(ops) >= 2 {
			op, arg := ops[0]%5, ops[1]
			ops = ops[2:]
			switch op {
			case 0: // register write: 2 bytes of offset, 4 of value
				if len(ops) < 6 {
					return
				}
				off := uint32(binary.LittleEndian.Uint16(ops)) << 2
				off |= uint32(arg) << 18 & (mmioSize - 1)
				r.Regs.Write32(off, binary.LittleEndian.Uint32(ops[2:]))
				ops = ops[6:]
			case 1: // a frame of arg*8 bytes, cut from a valid one
				n := min(int(arg)*8, len(frame))
				r.Inject(frame[:n])
			case 2:
				r.nic.SetLink(arg&1 != 0, []int{10, 100, 1000, 2500}[arg>>1&3])
			case 3: // a descriptor from the fuzz input
				if len(ops) < 16 {
					return
				}
				lo, hi := binary.LittleEndian.Uint64(ops), binary.LittleEndian.Uint64(ops[8:])
				r.post(0, txDesc{lo, hi})
				ops = ops[16:]
			case 4:
				r.Regs.Read32(uint32(arg) << 2)
				r.takeRx(uint32(arg) % 2)
			}
		}
		c := r.nic.Counters()
		var perQueue uint64
		for _, v := range c.RxQueue {
			perQueue += v
		}
		if perQueue != c.RxFrames {
			t.Errorf("per-queue frames %d, total %d", perQueue, c.RxFrames)
		}
	})
}
