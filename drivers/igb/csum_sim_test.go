package igb_test

import (
	"testing"

	"github.com/ether9/ether9/drivers/internal/testhost"
	"github.com/ether9/ether9/kernel/sim/wire"
)

// TestSimRxCsum sends good and corrupted TCP and UDP frames over IPv4 and
// IPv6 through the 82576 model: CsumOK is set exactly on the good ones.
// It fails if the driver takes L4I as a verified checksum without
// looking at L4E and IPE.
func TestSimRxCsum(t *testing.T) {
	for _, tc := range []struct {
		name     string
		newHost  func(testing.TB, *wire.End, byte, bool) *host
		coherent bool
	}{
		{"coherent", newHost, true},
		{"noncoherent", newHost, false},
		{"deferred", newDeferredHost, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := testhost.Wire(t, wire.Options{})
			h := tc.newHost(t, w.A(), 1, !tc.coherent)
			testhost.CheckRxCsum(t, h.NIC, w.B())
			if err := h.NIC.Close(); err != nil {
				t.Fatal(err)
			}
			h.checkClosed(t)
		})
	}
}
