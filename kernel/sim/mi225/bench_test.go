package mi225

import (
	"fmt"
	"testing"
)

// BenchmarkRx measures the model's receive path per frame: filtering,
// parsing and checksum verification, descriptor fetch, data DMA and
// write-back, statistics and the interrupt, with the ring recycled as a
// driver would, 32 descriptors per RDT write. The 64-byte case is what
// the driver's 2.5 GbE line-rate figure (3.72 Mpps) runs through.
func BenchmarkRx(b *testing.B) {
	for _, size := range []int{60, 1514} {
		b.Run(fmt.Sprint(size+fcsLen), func(b *testing.B) {
			r := newRig(b, 0x125c)
			r.setupRx(0, 256, 2048, SrrctlDescAdvOne, rctlStd)
			f := udpFrame(false, ourMAC, payloadBytes(size-42, 1), true)
			port := r.Wire.B()
			b.ReportAllocs()
			b.SetBytes(int64(len(f)))
			next := 0
			for b.Loop() {
				port.Send(f)
				r.armRx(0, next)
				if next%32 == 31 {
					r.Regs.Write32(RDT, uint32(next))
				}
				next = (next + 1) % 256
			}
			if c := r.nic.Counters(); c.RxNoDescriptor != 0 || c.RxDMAFaults != 0 {
				b.Fatalf("drops: %+v", c)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/1e6, "Mpps")
		})
	}
}

// BenchmarkTxTSO measures segmentation of a 64 KiB TSO packet.
func BenchmarkTxTSO(b *testing.B) {
	r := newRig(b, 0x15f3)
	r.setupTx(0, 8)
	r.Wire.B().Receive(func([]byte) {})
	payload := payloadBytes(65000-54, 3)
	f := tcpFrame(false, peerMAC, payload, 0x10, false, 0)
	ctx := ctxTx(macLen, 20, 0, TucmdL4TCP|TucmdIPv4, 20, 1448, 0)
	addr := r.txBuf(0, 1, f)
	b.ReportAllocs()
	b.SetBytes(int64(len(f)))
	for b.Loop() {
		r.putTx(0, ctx)
		r.putTx(0, dataTx(addr, len(f), TxdCmdTSE|TxdCmdEOP|TxdCmdRS, TxdPoptsTXSM|TxdPoptsIXSM|uint32(len(payload))<<TxdPaylenShift))
		r.kickTx(0)
	}
}
