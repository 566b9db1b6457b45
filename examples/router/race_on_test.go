//go:build race

package main

// raceOn: the test binary has the race detector.
const raceOn = true
