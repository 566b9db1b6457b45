package igb

import (
	"github.com/ether9/ether9/drivers/adv"
)

// retaEntry is the value of redirection table entry i for n queues.
func (d *Device) retaEntry(i, n int) uint32 {
	q := uint32(i % n)
	if d.info.Flags&FlagRETAShift6 != 0 {
		return q << 6
	}
	return q
}

// setupRSS spreads the redirection table over the queues and hashes
// IPv4/IPv6 with TCP and UDP ports (adv.SetupRSS). One queue means no
// RSS: MRQC stays 0.
func (d *Device) setupRSS() {
	n := len(d.queues)
	d.Core.SetupRSS(func(i int) uint32 { return d.retaEntry(i, n) }, n > 1)
}

// Toeplitz computes the RSS hash of input as the device does
// (adv.Toeplitz): for tests and for tools that pick a flow for a queue.
func Toeplitz(input []byte) uint32 { return adv.Toeplitz(input) }

// QueueOfHash is the queue the redirection table sends hash h to.
func (d *Device) QueueOfHash(h uint32) int {
	return int(d.retaEntry(int(h&(adv.RETAEntries-1)), len(d.queues)) >> d.retaShift())
}

func (d *Device) retaShift() uint {
	if d.info.Flags&FlagRETAShift6 != 0 {
		return 6
	}
	return 0
}
