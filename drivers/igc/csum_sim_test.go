package igc_test

import (
	"net/netip"
	"testing"

	"github.com/ether9/ether9/drivers/internal/testhost"
	"github.com/ether9/ether9/kernel/sim/wire"
)

// TestSimRxCsum sends good and corrupted TCP and UDP frames over IPv4 and
// IPv6 through the I225 model: CsumOK is set exactly on the good ones.
// It fails if the driver takes L4I as a verified checksum without
// looking at L4E and IPE.
func TestSimRxCsum(t *testing.T) {
	for _, tc := range []struct {
		name        string
		device      uint16
		nonCoherent bool
	}{
		{"I225-LM", 0x15f2, false},
		{"I225-LM/noncoherent", 0x15f2, true},
		{"I226-LM", 0x125b, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := testhost.Wire(t, wire.Options{})
			h := newHost(t, w.A(), 1, netip.Prefix{}, tc.device, tc.nonCoherent)
			testhost.CheckRxCsum(t, h.NIC, w.B())
			h.close(t)
		})
	}
}
