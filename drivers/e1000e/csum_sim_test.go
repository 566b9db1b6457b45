package e1000e_test

import (
	"testing"

	"github.com/ether9/ether9/drivers/internal/testhost"
	"github.com/ether9/ether9/kernel/sim/m82574"
)

// TestSimRxCsum sends good and corrupted TCP and UDP frames over IPv4 and
// IPv6 through the 82574 model: CsumOK is set exactly on the good ones.
// It fails if the driver takes TCPCS or UDPCS as a verified checksum
// without looking at TCPE and IPE.
func TestSimRxCsum(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    rigOpt
	}{
		{"82574L", rigOpt{}},
		{"82574L/noncoherent", rigOpt{nonCoherent: true}},
		{"I219-LM", rigOpt{pers: m82574.I219LM}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mc := newMachine(t, tc.o)
			testhost.CheckRxCsum(t, mc.NIC, mc.wire.B())
			mc.CheckNoFaults(t)
			mc.close(t)
		})
	}
}
