package igc

import "github.com/ether9/ether9/drivers/adv"

// setupRSS spreads the redirection table over the queues (one byte per
// entry, the queue number) and hashes IPv4/IPv6 with TCP and UDP ports
// (adv.SetupRSS). One queue, or RSS turned off, means no RSS: MRQC 0,
// every frame to queue 0.
func (d *Device) setupRSS() {
	n := len(d.queues)
	if !d.rss.Load() {
		n = 1
	}
	d.Core.SetupRSS(func(i int) uint32 { return uint32(i % n) }, n > 1)
}

// QueueOfHash is the queue the redirection table sends RSS hash h to.
func (d *Device) QueueOfHash(h uint32) int { return int(h&(adv.RETAEntries-1)) % len(d.queues) }
