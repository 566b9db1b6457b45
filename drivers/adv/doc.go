// Package adv is what Intel's advanced-descriptor controllers share: the
// 82575/82576 family (igb) and the I225/I226 (igc). Both datasheets call
// their descriptor format "advanced" and build on it the same register
// map, MAC bring-up, multicast table, RSS and MSI-X vector set-up, so
// their drivers share a device (Port) and a queue pair (Pair) and keep
// only what differs: id tables, reset, PHY and link, the RX buffer
// layouts, filters and interrupt routing. The 82574 (e1000e) has legacy
// and extended descriptors instead. The name says what ties the package
// together, the descriptor format, rather than one part number, since
// the I225 is no 82575.
//
// Files go by concern:
//
//	port.go     a device: bring-up, control, statistics, close, socket binding
//	pair.go     a queue pair: its receive loop, fault rule, TX queue, close
//	pairxsk.go  a queue pair as the socket side drives it (xsk.Hw)
//	desc.go     the RX write-back and TX data/context descriptor layouts
//	regs.go     the registers both families place and define alike
//	rxzc.go     a queue's receive side while a socket's frames are armed
//	tx.go       the TX writer: context, split, bounce, software GSO
//	txqueue.go  a TX queue: the writer, its tail and its reclaim
//	mac.go      reset, NVM, station address, PHY, queue enable handshake
//	unit.go     receive and transmit unit start and stop, per queue
//	mta.go      the multicast table array
//	rss.go      the redirection table and hash key
//	link.go     link state from STATUS
//	irq.go      queue vectors (IVAR), ITR, legacy INTx causes
//
// Register and bit names are the datasheets'.
package adv
