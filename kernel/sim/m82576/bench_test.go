package m82576

import (
	"testing"

	"github.com/ether9/ether9/kernel/sim/nicmodel"
)

// benchRx runs frames of the given size through the model's receive path
// (filters, RSS, DMA through the machine's port, write-back), returning
// each descriptor as soon as it completes.
func benchRx(b *testing.B, size int) {
	r := newRig(b)
	r.setupRx(0, 256, 2048)
	r.programRSS(nicmodel.MrqcUDPIPv4 | nicmodel.MrqcTCPIPv4)
	r.programRETA(func(uint32) uint32 { return 0 })
	f := udp4(srcIP4, dstIP4, 1, 2, make([]byte, max(size-42, 0)))
	b.SetBytes(int64(len(f)))
	b.ResetTimer()
	for range b.N {
		r.nic.receive(f)
		if _, _, ok := r.takeRx(0); !ok {
			b.Fatal("frame not received")
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/1e6, "Mpps")
}

func BenchmarkRx64(b *testing.B)   { benchRx(b, 60) }
func BenchmarkRx1514(b *testing.B) { benchRx(b, 1514) }

// benchTx posts one packet per iteration, with checksum offload, or with
// TSO for 64 KiB packets.
func benchTx(b *testing.B, payload int, tso bool) {
	r := newRig(b)
	r.setupTx(0, 256)
	r.Wire.B().Receive(func([]byte) {})
	var f []byte
	var ds []txDesc
	tucmd := uint32(TucmdIPv4 | L4TTCP<<TucmdL4TSh)
	if tso {
		f = tsoPacket(false, make([]byte, payload))
		ds = []txDesc{
			ctxDesc(0, 14, 20, tucmd, 1448, 20, 0),
			dataDesc(r.buf(0, f), len(f), TxdTSE|TxdEOP|TxdRS, OlinfoIXSM|OlinfoTXSM|uint32(payload)<<OlinfoPayLenSh),
		}
	} else {
		f = tcp4(dstIP4, srcIP4, 80, 1, make([]byte, payload))
		ds = []txDesc{
			ctxDesc(0, 14, 20, tucmd, 0, 20, 0),
			dataDesc(r.buf(0, f), len(f), TxdEOP|TxdRS, OlinfoIXSM|OlinfoTXSM|uint32(len(f))<<OlinfoPayLenSh),
		}
	}
	b.SetBytes(int64(len(f)))
	b.ResetTimer()
	for range b.N {
		r.post(0, ds...)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/1e6, "Mpps")
	if c := r.nic.Counters(); c.TxPackets != uint64(2*b.N)/2 || c.TxBadDesc != 0 {
		b.Fatalf("counters %+v", c)
	}
}

func BenchmarkTx64(b *testing.B)     { benchTx(b, 6, false) }
func BenchmarkTx1514(b *testing.B)   { benchTx(b, 1460, false) }
func BenchmarkTxTSO64K(b *testing.B) { benchTx(b, 65000, true) }
