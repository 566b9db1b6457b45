// Command l2fwd receives frames, swaps their MAC addresses and sends them back, through a zero-copy queue by default, on the
// simulated machine (an 82576 bound by igb, or with -nic igc an I225, behind
// VT-d with a traffic generator at the far end of its wire), and prints
// frames per second.
//
//	go run ./tools/l2fwd [-nic igb|igc] [-path netstack|copy|zero-copy] [-size 64] [-time 2s]
package main

import (
	"os"

	"github.com/ether9/ether9/tools/xdp"
)

func main() {
	os.Exit(xdp.Main("l2fwd", os.Args[1:], os.Stdout, os.Stderr))
}
