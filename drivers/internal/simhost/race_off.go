//go:build !race

package simhost

const raceOn = false
