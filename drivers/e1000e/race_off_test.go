//go:build !race

package e1000e_test

const raceOn = false
