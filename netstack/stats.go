package netstack

import (
	"sync/atomic"

	"github.com/ether9/ether9/drivers/nic"
)

// counters are the endpoint's own statistics, updated without locks.
type counters struct {
	rxPackets, rxBytes atomic.Uint64
	rxNoDispatcher     atomic.Uint64 // frames that arrived while detached
	rxRunts            atomic.Uint64 // shorter than an Ethernet header
	rxTrimmed          atomic.Uint64 // carried bytes after their IP datagram (padding, CRC)
	rxCsumHW           atomic.Uint64 // checksums verified by the device
	rxCsumSW           atomic.Uint64 // checksums verified here
	rxCsumBad          atomic.Uint64 // dropped for a bad checksum
	rxCsumHWWrong      atomic.Uint64 // device-verified, found bad by the audit, dropped
	rxGRO              atomic.Uint64 // frames given to a GRO engine
	rxDelivered        atomic.Uint64 // packets handed to the stack, after coalescing

	txPackets, txBytes atomic.Uint64
	txBatches          atomic.Uint64 // WritePackets calls that reached a queue
	txGSO              atomic.Uint64 // packets handed over for segmentation
	txRingFull         atomic.Uint64 // times Transmit found the ring full
	txDropped          atomic.Uint64 // packets dropped (ring full past TxTimeout, refused)
	txErrors           atomic.Uint64 // Transmit errors
	txLinkDown         atomic.Uint64 // packets dropped while the link was down

	polls           atomic.Uint64
	budgetExhausted atomic.Uint64 // polls that used their whole budget
	idleWaits       atomic.Uint64
	waitNanos       atomic.Uint64 // time the idle waits really took
	spins           atomic.Uint64 // empty polls while traffic was recent
	linkChanges     atomic.Uint64
	pollPanics      atomic.Uint64
	closeStuck      atomic.Uint64 // closes that gave up waiting for a poll loop
}

// Stats returns the endpoint's counters in a stable order, in the same
// form as the driver's.
func (e *Endpoint) Stats() []nic.Stat {
	c := &e.stats
	return []nic.Stat{
		{Name: "rx_packets", Value: c.rxPackets.Load()},
		{Name: "rx_bytes", Value: c.rxBytes.Load()},
		{Name: "rx_no_dispatcher", Value: c.rxNoDispatcher.Load()},
		{Name: "rx_runts", Value: c.rxRunts.Load()},
		{Name: "rx_trimmed", Value: c.rxTrimmed.Load()},
		{Name: "rx_csum_hw", Value: c.rxCsumHW.Load()},
		{Name: "rx_csum_sw", Value: c.rxCsumSW.Load()},
		{Name: "rx_csum_bad", Value: c.rxCsumBad.Load()},
		{Name: "rx_csum_hw_wrong", Value: c.rxCsumHWWrong.Load()},
		{Name: "rx_gro", Value: c.rxGRO.Load()},
		{Name: "rx_delivered", Value: c.rxDelivered.Load()},
		{Name: "tx_packets", Value: c.txPackets.Load()},
		{Name: "tx_bytes", Value: c.txBytes.Load()},
		{Name: "tx_batches", Value: c.txBatches.Load()},
		{Name: "tx_gso", Value: c.txGSO.Load()},
		{Name: "tx_ring_full", Value: c.txRingFull.Load()},
		{Name: "tx_dropped", Value: c.txDropped.Load()},
		{Name: "tx_errors", Value: c.txErrors.Load()},
		{Name: "tx_link_down", Value: c.txLinkDown.Load()},
		{Name: "polls", Value: c.polls.Load()},
		{Name: "poll_budget_exhausted", Value: c.budgetExhausted.Load()},
		{Name: "idle_waits", Value: c.idleWaits.Load()},
		{Name: "idle_wait_us", Value: c.waitNanos.Load() / 1000},
		{Name: "spins", Value: c.spins.Load()},
		{Name: "link_changes", Value: c.linkChanges.Load()},
		{Name: "poll_panics", Value: c.pollPanics.Load()},
		{Name: "close_stuck", Value: c.closeStuck.Load()},
	}
}

// Stat returns one counter by name, and whether it exists.
func (e *Endpoint) Stat(name string) (uint64, bool) {
	for _, s := range e.Stats() {
		if s.Name == name {
			return s.Value, true
		}
	}
	return 0, false
}
