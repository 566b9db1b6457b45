//go:build !race

package simhost

const raceEnabled = false
