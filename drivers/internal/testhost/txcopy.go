package testhost

import (
	"testing"
	"time"

	"github.com/ether9/ether9/drivers/internal/nictest"
	"github.com/ether9/ether9/drivers/nic"
	"gvisor.dev/gvisor/pkg/buffer"
)

// txCopyFrames is how many frames CheckTxNoMaps sends: several rings'
// worth, so that bounce slots are reused many times over.
const txCopyFrames = 1000

// maxIdle bounds the idle waits CheckTxNoMaps makes in a row.
const maxIdle = 1000

// idle does what a poll loop does when its queue has nothing to reclaim:
// it receives (e1000e reads ICR) and sleeps on the queue's interrupt
// (igb and igc re-arm it), either of which lets a model that defers its
// transmit work go on. Nothing is sent to the NIC; a frame that came
// anyway is let go.
func idle(q nic.Queue) {
	var pkts [8]nic.RxPacket
	n, _ := q.Receive(pkts[:])
	for i := range pkts[:n] {
		pkts[i].Data.Release()
	}
	q.Wait(time.Millisecond)
}

// CheckTxNoMaps sends frames of 60 to 1514 bytes, each in two views (the
// headers and the payload, as the stack builds them), in batches larger
// than the ring, then TSO packets of 60,000 payload bytes over IPv4 and
// IPv6 (tso is the Ctl that turns TSO on), and checks that every frame
// reaches peer with its own bytes and that none of it was mapped for the
// device: neither the NIC's tx_maps nor maps() (the IOMMU's map count)
// moved. Under a model that defers its transmit work (TxModes), a driver
// that reuses a bounce slot before the device reported its descriptor
// done puts the wrong bytes on the wire.
func CheckTxNoMaps(t testing.TB, n nic.NIC, q nic.Queue, peer *Peer, tso string, maps func() uint64) {
	t.Helper()
	peer.Reset()
	txMaps, iommuMaps := nictest.Stat(t, n.Stats(), "tx_maps"), maps()
	want := func(i int) []byte { return UDPFrame([6]byte{2, 0, 0, 0, 0, 2}, 9, 60+i*37%1455, uint32(i)) }
	checked, touches := 0, 0
	for sent := 0; sent < txCopyFrames; {
		var pkts []*nic.TxPacket
		for i := sent; i < min(sent+300, txCopyFrames); i++ {
			f := want(i)
			b := buffer.MakeWithView(buffer.NewViewWithData(f[:42]))
			b.Append(buffer.NewViewWithData(f[42:]))
			pkts = append(pkts, &nic.TxPacket{Data: b})
		}
		took, err := q.Transmit(pkts)
		if err != nil {
			t.Fatalf("transmit frames %d..: %v", sent, err)
		}
		for _, p := range pkts[took:] {
			p.Data.Release()
		}
		sent += took
		if took == 0 && q.Reclaim() == 0 {
			if touches++; touches > maxIdle {
				t.Fatalf("ring full for good: %d of %d frames taken, %d on the wire", sent, txCopyFrames, peer.Len())
			}
			idle(q)
		}
		peer.Check(t, &checked, want)
	}
	for touches = 0; peer.Len() < txCopyFrames && touches < maxIdle; touches++ {
		if q.Reclaim() == 0 {
			idle(q)
		}
	}
	q.Reclaim()
	peer.Check(t, &checked, want)
	if checked != txCopyFrames {
		t.Fatalf("%d of %d frames on the wire", checked, txCopyFrames)
	}
	if err := n.Ctl(tso); err != nil {
		t.Fatal(err)
	}
	tsoBefore := nictest.Stat(t, n.Stats(), "tx_tso")
	for _, v6 := range []bool{false, true} {
		sendTSO(t, q, peer, v6, 60000)
	}
	if got := nictest.Stat(t, n.Stats(), "tx_tso") - tsoBefore; got != 2 {
		t.Errorf("tx_tso moved by %d for two TSO packets", got)
	}
	if got := nictest.Stat(t, n.Stats(), "tx_maps") - txMaps; got != 0 {
		t.Errorf("tx_maps moved by %d for %d frames and two TSO packets", got, txCopyFrames)
	}
	if got := maps() - iommuMaps; got != 0 {
		t.Errorf("the IOMMU made %d maps for %d frames and two TSO packets", got, txCopyFrames)
	}
	if s := nictest.Stat(t, n.Stats(), "tx_map_failures"); s != 0 {
		t.Errorf("tx_map_failures %d", s)
	}
}

// sendTSO sends nictest.GSOPacket(v6, 7, payload) on q once the ring has
// room, waits for its segments on peer and checks them.
func sendTSO(t testing.TB, q nic.Queue, peer *Peer, v6 bool, payload int) {
	t.Helper()
	peer.Reset()
	p, _, _ := nictest.GSOPacket(v6, 7, payload)
	for touches := 0; ; touches++ {
		took, err := q.Transmit([]*nic.TxPacket{p})
		if err != nil {
			t.Fatalf("transmit a GSO packet of %d payload bytes: %v", payload, err)
		}
		if took == 1 {
			break
		}
		if touches > maxIdle {
			p.Data.Release()
			t.Fatalf("no room for a GSO packet of %d payload bytes", payload)
		}
		if q.Reclaim() == 0 {
			idle(q)
		}
	}
	segs := (payload + nictest.GSOMSS(v6) - 1) / nictest.GSOMSS(v6)
	for touches := 0; peer.Len() < segs && touches < maxIdle; touches++ {
		if q.Reclaim() == 0 {
			idle(q)
		}
	}
	q.Reclaim()
	nictest.CheckGSO(t, peer.Frames(), v6, 7, payload)
}
