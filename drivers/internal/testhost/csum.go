package testhost

import (
	"bytes"
	"testing"
	"time"

	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/kernel/sim/nicmodel/nicmodeltest"
	"github.com/ether9/ether9/kernel/sim/wire"
)

// rxDeadline bounds the wait for one frame: a model without DeferRx has
// it in a ring as Send returns, one with DeferRx once the queue's Wait
// arms its vector.
const rxDeadline = 2 * time.Second

// CheckRxCsum sends each of nicmodeltest.CsumCases from end to n, which
// must offer receive checksum offload, and checks that each frame comes
// up once, intact, with CsumOK exactly when all its checksums are right:
// a driver that read TCPCS or L4I without the error bits (TCPE or L4E,
// IPE) would pass a corrupted segment up as verified.
func CheckRxCsum(t testing.TB, n nic.NIC, end *wire.End) {
	t.Helper()
	if !n.Features().RxChecksum {
		t.Fatalf("%s: receive checksum offload off, features %+v", n.Name(), n.Features())
	}
	peer := [6]byte{0x02, 0, 0, 0, 0, 0xfe}
	p := nicmodeltest.Packet{Dst: n.MAC(), Src: peer}
	for _, c := range nicmodeltest.CsumCases(p, p) {
		end.Send(c.Frame)
		got := PollFrames(t, n, c.Name)
		if len(got) != 1 {
			t.Errorf("%s: %d frames came up, want 1", c.Name, len(got))
		}
		for _, pkt := range got {
			if b := pkt.Data.Flatten(); !bytes.Equal(b, c.Frame) {
				t.Errorf("%s: %d bytes came up differing from the %d sent", c.Name, len(b), len(c.Frame))
			}
			if pkt.CsumOK != c.Good {
				t.Errorf("%s: CsumOK %v, want %v (bad IP header %v, bad L4 %v)", c.Name, pkt.CsumOK, c.Good, c.BadIP, c.BadL4)
			}
			pkt.Data.Release()
		}
	}
}

// PollFrames polls every queue of n, and waits on each as a poll loop
// does between polls, until frames have come up and a further pass over
// all queues finds none, and returns them; it fails the test, with the
// NIC's counters, if none came up within rxDeadline.
func PollFrames(t testing.TB, n nic.NIC, what string) []*nic.RxPacket {
	t.Helper()
	var got []*nic.RxPacket
	batch := make([]nic.RxPacket, 64)
	deadline := time.Now().Add(rxDeadline)
	for {
		polled := 0
		for _, q := range n.Queues() {
			k, taken := q.Receive(batch)
			for i := range batch[:k] {
				p := batch[i]
				got = append(got, &p)
			}
			clear(batch[:k])
			polled += taken
		}
		if polled == 0 && len(got) > 0 {
			return got
		}
		if polled == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%s: no frame came up on %s's %d queues within %v; stats %v", what, n.Name(), len(n.Queues()), rxDeadline, n.Stats())
			}
			for _, q := range n.Queues() {
				q.Wait(time.Millisecond)
			}
		}
	}
}
