package e1000e_test

import (
	"bytes"
	"fmt"
	"net/netip"
	"testing"

	"github.com/ether9/ether9/drivers/internal/testhost"
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/m82574"
	"github.com/ether9/ether9/kernel/sim/wire"
	"github.com/ether9/ether9/netstack"
	"github.com/ether9/ether9/pci"
)

// newHost is a machine whose 82574L model, its MAC ending in last, sits
// on end, with gVisor on top at 10.9.0.last; logf gets the driver's log
// (nil: probe's default).
func newHost(t *testing.T, end *wire.End, last byte, logf func(string, ...any)) *testhost.Host[*m82574.NIC] {
	t.Helper()
	return newHostTx(t, end, last, logf, testhost.TxModes[0])
}

// newHostTx is newHost with the model's transmit work done as tx says.
func newHostTx(t *testing.T, end *wire.End, last byte, logf func(string, ...any), tx testhost.TxMode) *testhost.Host[*m82574.NIC] {
	t.Helper()
	// DeferRx: frames wait in the model's packet buffer until this
	// machine's receive path touches the device, so the ring is written on
	// the goroutine that reads it, as one CPU sees its NIC.
	h := testhost.New(t, testhost.Options{Addr: machineAddr, Polling: true, Logf: logf, End: end}, func(m *sim.Machine, a pci.Addr) (*m82574.NIC, error) {
		return m82574.Plug(m, a, m82574.Options{MAC: [6]byte{0x02, 0, 0, 0, 0, last}, DeferRx: true, DeferTx: tx.Defer, TxPerTouch: tx.PerTouch})
	})
	h.Up(t, netip.MustParsePrefix(fmt.Sprintf("10.9.0.%d/24", last)), netstack.Options{})
	return h
}

// TestEndToEndLinkDropMidTransfer: the link falls from 1000 to 100 Mb/s in
// the middle of a TCP transfer whose connection chose GSO while TSO was on.
// The connection survives, the driver segments in software from then on,
// and the capture holds no frame above the MTU.
func TestEndToEndLinkDropMidTransfer(t *testing.T) {
	for _, tx := range testhost.TxModes {
		t.Run(tx.Name, func(t *testing.T) { testLinkDropMidTransfer(t, tx) })
	}
}

func testLinkDropMidTransfer(t *testing.T, tx testhost.TxMode) {
	tx.SkipRacy(t)
	size := 32 << 20
	if testing.Short() || raceOn {
		size = 8 << 20
	}
	var capture bytes.Buffer
	w := testhost.Wire(t, wire.Options{Pcap: &capture})
	a := newHostTx(t, w.A(), 1, nil, tx)
	b := newHostTx(t, w.B(), 2, nil, tx)
	testhost.TCP(t, a.Stack, b.Stack, netip.MustParseAddr("10.9.0.2"), size, func() {
		if err := w.SetLink(true, 100); err != nil {
			t.Fatal(err)
		}
	})
	stats := map[string]uint64{}
	for _, s := range a.NIC.Stats() {
		stats[s.Name] = s.Value
	}
	if a.NIC.Link().SpeedMbps != 100 || a.NIC.Features().TSOv4 {
		t.Errorf("after the drop: link %+v features %+v", a.NIC.Link(), a.NIC.Features())
	}
	if stats["tx_tso"] == 0 || stats["tx_soft_gso"] == 0 {
		t.Errorf("tx_tso %d tx_soft_gso %d: want both paths used", stats["tx_tso"], stats["tx_soft_gso"])
	}
	// Stop all traffic before reading the capture the wire writes.
	a.Close(t)
	b.Close(t)
	for _, h := range []*testhost.Host[*m82574.NIC]{a, b} {
		h.CheckNoFaults(t)
		if c := h.Model.Counters(); c.TxDMAFaults != 0 || c.RxDMAFaults != 0 {
			t.Errorf("%s: the model's DMA faulted: %+v", h.NIC.Name(), c)
		}
	}
	if err := w.Err(); err != nil {
		t.Fatal(err)
	}
	_, pkts, err := wire.ReadPcap(&capture)
	if err != nil {
		t.Fatal(err)
	}
	big := 0
	for _, p := range pkts {
		if p.OrigLen > 1514 {
			big++
		}
	}
	if len(pkts) == 0 || big != 0 {
		t.Errorf("capture: %d frames, %d above 1514 bytes", len(pkts), big)
	}
}
