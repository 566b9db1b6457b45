//go:build race

package e1000e_test

// raceOn shortens the long transfers under the race detector, which slows
// them tenfold.
const raceOn = true
