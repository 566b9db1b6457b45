package advplay

import (
	"testing"

	"github.com/ether9/ether9/drivers/adv"
	"github.com/ether9/ether9/drivers/internal/fakedev"
	"github.com/ether9/ether9/drivers/internal/nictest"
	"github.com/ether9/ether9/drivers/nic"
)

// CheckRxReady checks queue qi's nic.RxReadier as the parts share it: the
// next descriptor's write-back alone decides, in order (a later one
// written back first does not count); asking touches no register (ICR,
// set here, clears when read); once Receive has taken the frames the
// queue is not ready; and a closed NIC never is. d plays the device over
// regs; q is queue qi of u's NIC.
func CheckRxReady(t *testing.T, regs *fakedev.File, d *Device, u nictest.Unit, q nic.Queue, qi int) {
	t.Helper()
	r, ok := q.(nic.RxReadier)
	if !ok {
		t.Fatalf("queue %d is no nic.RxReadier: a spinning poll loop would call Receive, touching registers", qi)
	}
	regs.Set(adv.ICR, adv.ICR_LSC)
	before := regs.Snapshot()
	if r.RxReady() {
		t.Fatal("ready with nothing written back")
	}
	rx, _ := d.rings(qi)
	head := d.RxHead[qi]
	const done = adv.RXD_STAT_DD | adv.RXD_STAT_EOP
	d.Writeback(qi, rx.Next(head), done, 60, 0)
	if r.RxReady() {
		t.Fatal("ready on a descriptor past the next one")
	}
	d.Writeback(qi, head, done, 60, 0)
	if !r.RxReady() {
		t.Fatal("not ready with the next descriptor written back")
	}
	if after := regs.Snapshot(); after != before {
		t.Fatalf("RxReady touched the registers:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	d.RxHead[qi] = rx.Next(rx.Next(head))
	pkts := make([]nic.RxPacket, 8)
	n, taken := q.Receive(pkts)
	for _, p := range pkts[:n] {
		p.Data.Release()
	}
	if taken != 2 {
		t.Fatalf("Receive took %d descriptors, want the 2 written back", taken)
	}
	if r.RxReady() {
		t.Fatal("still ready after Receive took both frames")
	}
	d.Writeback(qi, d.RxHead[qi], done, 60, 0)
	if err := u.NIC.Close(); err != nil {
		t.Fatal(err)
	}
	if r.RxReady() {
		t.Fatal("a closed NIC is ready")
	}
}
