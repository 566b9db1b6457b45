package advplay

import (
	"testing"

	"github.com/ether9/ether9/drivers/adv"
	"github.com/ether9/ether9/drivers/nic"
)

// CheckQueuePairs probes a part of max queue pairs asking for 1 and 2
// (probe returns the registers the driver left and the NIC) and checks
// that it brought up as many: exactly the first ones' receive queues
// enabled, RSS on only with more than one, and no redirection table
// entry naming a queue that is not there.
func CheckQueuePairs(t *testing.T, max int, probe func(pairs int) (Regs, nic.NIC, error)) {
	for _, want := range []int{1, 2} {
		regs, n, err := probe(want)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(n.Queues()); got != want {
			t.Errorf("asked for %d queue pairs, got %d", want, got)
		}
		for q := range max {
			on := regs.Get(adv.QueueReg(adv.RXDCTL, q))&adv.XDCTL_ENABLE != 0
			if on != (q < want) {
				t.Errorf("%d pairs: queue %d RX enabled %v", want, q, on)
			}
		}
		if rss := regs.Get(adv.MRQC)&7 == adv.MRQC_ENABLE_RSS; rss != (want > 1) {
			t.Errorf("%d pairs: MRQC %#x", want, regs.Get(adv.MRQC))
		}
		for i := range adv.RETAEntries {
			if e := regs.Get(adv.RETA+uint32(i/4*4)) >> (8 * (i % 4)) & 0xff; int(e) >= want {
				t.Errorf("%d pairs: RETA entry %d names queue %d", want, i, e)
				break
			}
		}
		n.Close()
	}
}
