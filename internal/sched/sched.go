// Package sched reads how many goroutines are in system calls and
// how many wait, from runtime/metrics: what a test reads to tell a wait
// parked in the network poller (which frees its P) from one blocked in
// a system call (which holds the P until sysmon takes it back).
package sched

import "runtime/metrics"

// Goroutines returns the goroutines not in Go (in system calls or cgo) and
// those waiting (parked: channels, locks, the poller).
func Goroutines() (notInGo, waiting uint64) {
	s := []metrics.Sample{
		{Name: "/sched/goroutines/not-in-go:goroutines"},
		{Name: "/sched/goroutines/waiting:goroutines"},
	}
	metrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64()
}
