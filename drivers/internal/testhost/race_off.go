//go:build !race

package testhost

const raceOn = false
