//go:build race

package simhost

// raceOn: the race detector is on.
const raceOn = true
