package m82574

import (
	"encoding/binary"
	"testing"

	"github.com/ether9/ether9/kernel/sim/nicmodel"
)

// FuzzTxRing hands the model a ring of arbitrary descriptors over buffers
// of arbitrary bytes, as a buggy driver might: it must not panic, must
// complete what it was given, and must never put a frame on the wire that
// is larger than the largest packet it accepts.
func FuzzTxRing(f *testing.F) {
	seed := make([]byte, 8*descLen)
	ctx := contextTx(txContext{ipcss: 14, ipcso: 24, tucss: 34, tucso: 50, hdrlen: 54, mss: 100,
		tucmd: TucmdTCP | TucmdIP | TucmdTSE, paylen: 500})
	copy(seed, ctx[:])
	d := dataTx(0, 554, TxdTSE|TxdEOP|TxdRS, PoptsIXSM|PoptsTXSM)
	copy(seed[descLen:], d[:])
	f.Add(seed, []byte("payload"))
	f.Add(make([]byte, 3*descLen), []byte{})
	f.Fuzz(func(t *testing.T, descs, data []byte) {
		r := newRig(t, M82574L)
		r.setupTx()
		longest := 0
		r.Wire.B().Receive(func(fr []byte) { longest = max(longest, len(fr)) })
		copy(r.txBufs.Buf, data)
		n := min(len(descs)/descLen, ringSize-1)
		for i := range n {
			var d [descLen]byte
			copy(d[:], descs[i*descLen:])
			// Keep buffer addresses inside the buffer area most of the
			// time, so the fuzzer explores the offloads, not only faults.
			a := binary.LittleEndian.Uint64(d[:])
			if a&1 == 0 {
				binary.LittleEndian.PutUint64(d[:], uint64(r.txBufs.Phys)+a%uint64(len(r.txBufs.Buf)))
			}
			r.putTx(d)
		}
		r.kickTx()
		if h := r.Regs.Read32(TDH); int(h) != n {
			t.Fatalf("TDH %d after %d descriptors", h, n)
		}
		if longest > nicmodel.MaxTxPacket+nicmodel.VLANTagLen {
			t.Fatalf("a %d-byte frame went out", longest)
		}
	})
}
