package m82574

import (
	"fmt"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// BenchmarkRx measures the model's receive path: one frame from the wire
// into the ring (descriptor fetch, data DMA, checksum verification,
// write-back, statistics), with the ring recycled as a driver would.
func BenchmarkRx(b *testing.B) {
	for _, size := range []int{60, 1514} {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			r := newRig(&testing.T{}, M82574L)
			r.setupRx(rctlBase, true)
			payload := size - l4Off4 - header.TCPMinimumSize
			f := tcp4(ourMAC, payloadBytes(max(payload, 0), 1), header.TCPFlagAck, true, 0)
			b.ReportAllocs()
			b.SetBytes(int64(len(f)))
			next := 0
			for b.Loop() {
				r.Wire.B().Send(f)
				r.armRx(next)
				r.Regs.Write32(RDT, uint32(next))
				next = (next + 1) % ringSize
			}
			if c := r.nic.Counters(); c.RxNoDescriptor != 0 {
				b.Fatalf("drops: %+v", c)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/frame")
		})
	}
}

// BenchmarkTxTSO measures segmentation of a 64 KiB TSO packet.
func BenchmarkTxTSO(b *testing.B) {
	r := newRig(&testing.T{}, M82574L)
	r.setupTx()
	r.Wire.B().Receive(func([]byte) {})
	payload := payloadBytes(16384-l4Off4-20, 3)
	f := tcp4(peerMAC, payload, header.TCPFlagAck, false, 0)
	c := txContext{ipcss: l3Off, ipcso: l3Off + 10, ipcse: l4Off4 - 1, tucss: l4Off4, tucso: l4Off4 + 16,
		hdrlen: l4Off4 + 20, tucmd: TucmdTCP | TucmdIP | TucmdTSE, mss: 1448, paylen: uint32(len(payload))}
	addr := r.txBuf(0, f)
	b.ReportAllocs()
	b.SetBytes(int64(len(f)))
	for b.Loop() {
		r.putTx(contextTx(c))
		r.putTx(dataTx(addr, len(f), TxdTSE|TxdEOP|TxdRS, PoptsIXSM|PoptsTXSM))
		r.kickTx()
	}
}
