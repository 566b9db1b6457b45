//go:build race

package testhost

// raceOn: the race detector is on.
const raceOn = true
