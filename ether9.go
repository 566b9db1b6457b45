// Package ether9 runs your Go program on a machine whose Intel Ethernet
// controllers (e1000e, igb, igc) ether9 drives itself, behind its own
// VT-d page tables, under gVisor's TCP/IP stack. A program is a function;
// main hands it to Main:
//
//	func main() { ether9.Main(serve) }
//
//	func serve(ctx context.Context, m *ether9.Machine) error {
//		ln, err := m.Listen("tcp", ":80")
//		if err != nil {
//			return err
//		}
//		return http.Serve(ln, handler)
//	}
//
// Main brings the machine up from the kernel command line (platform,
// PCI, VT-d, NICs, addresses by DHCP or ether9.ip=) and runs the program
// under a supervisor: an error or a panic is reported on the console with
// its stack, what that run listened on is closed, and the program runs
// again after a back-off (100 ms, doubling to 5 s while it keeps failing). The namespace (/net, /dev and the program's own
// files) is served on the console shell, over 9P and over HTTP beside it.
//
// The same binary is the image's /init (go run ./boot -app PKG) and, with
// -machine sim, an ordinary process on the simulated machine: NIC models
// behind a VT-d model, each cabled to a host-side peer.
package ether9

import "context"

// Program is what runs on the machine. It should return when ctx is done;
// an error or a panic before then restarts it.
type Program func(ctx context.Context, m *Machine) error

// Config says how Main runs a program. The zero value is a program named
// "app" with the kernel command line alone.
type Config struct {
	// Name names the program on console lines and in the supervisor.
	Name string
	// Cmdline holds the ether9.* words the program wants by default
	// ("ether9.ether1.ip=192.168.8.1/24"); the machine's own command
	// line comes after them and wins.
	Cmdline string
}

func (c Config) withDefaults() Config {
	if c.Name == "" {
		c.Name = "app"
	}
	return c
}

// Main runs p with the zero Config; see Config.Main.
func Main(p Program) { Config{}.Main(p) }
