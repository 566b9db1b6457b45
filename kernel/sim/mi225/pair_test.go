package mi225

import (
	"bytes"
	"testing"

	"github.com/ether9/ether9/kernel/sim/nicmodel"
	"github.com/ether9/ether9/kernel/sim/wire"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// TestTwoModelsOnOneWire sends a TSO packet from one model to another:
// every segment arrives on the far ring with its checksums verified good.
func TestTwoModelsOnOneWire(t *testing.T) {
	a, b := newRig(t, 0x15f3), newRig(t, 0x125c)
	w, err := wire.New(wire.Options{SpeedMbps: 2500})
	if err != nil {
		t.Fatal(err)
	}
	a.nic.Attach(w.A())
	b.nic.Attach(w.B())
	a.setupTx(0, 8)
	b.setupRx(0, 32, 2048, SrrctlDescAdvOne, rctlStd)

	payload := payloadBytes(10000, 7)
	f := tcpFrame(false, ourMAC, payload, header.TCPFlagAck, false, 0)
	ctx := ctxTx(macLen, 20, 0, TucmdL4TCP|TucmdIPv4, 20, 1448, 0)
	a.send(0, f, &ctx, TxdCmdTSE, TxdPoptsTXSM|TxdPoptsIXSM|uint32(len(payload))<<TxdPaylenShift)
	a.kickTx(0)

	n := (len(payload) + 1447) / 1448
	if h := b.Regs.Read32(RDH); h != uint32(n) {
		t.Fatalf("far RDH %d, want %d segments", h, n)
	}
	var got []byte
	for i := range n {
		wb := b.rxDesc(0, i)
		if wb.status&(RxdStaDD|RxdStaEOP|RxdStaIPCS|RxdStaL4I) != RxdStaDD|RxdStaEOP|RxdStaIPCS|RxdStaL4I ||
			wb.status&(RxdErrIPE|RxdErrL4E) != 0 {
			t.Fatalf("segment %d: status %#x", i, wb.status)
		}
		seg := b.rxBuf(0, i, wb.len())
		got = append(got, header.TCP(header.IPv4(seg[macLen:]).Payload()).Payload()...)
	}
	if !bytes.Equal(got, payload) {
		t.Fatal("payload changed on the way")
	}
	if tx, rx := a.Regs.Read32(nicmodel.GPTC), b.Regs.Read32(nicmodel.GPRC); tx != uint32(n) || rx != uint32(n) {
		t.Fatalf("GPTC %d GPRC %d, want %d", tx, rx, n)
	}
}
