//go:build race

package simhost

// raceEnabled: the race detector sees the 82574L model's descriptor
// write-back (a DMA from the wire's goroutine) and the driver's poll of the
// same descriptor as unordered, because nothing on the coherent ring gives
// the detector a happens-before edge. On hardware cache coherence orders
// them; in the simulation it needs the driver to sync the ring for the CPU
// before reading it.
const raceEnabled = true
