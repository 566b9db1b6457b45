package e1000e_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net/netip"
	"testing"
	"time"

	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/probe"
	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/iommu"
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/m82574"
	"github.com/ether9/ether9/kernel/sim/vtd"
	"github.com/ether9/ether9/kernel/sim/wire"
	"github.com/ether9/ether9/netstack"
	"github.com/ether9/ether9/pci"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
)

type host struct {
	m     *sim.Machine
	unit  *iommu.Unit
	nic   nic.NIC
	stack *netstack.Stack
}

func newHost(t *testing.T, end *wire.End, last byte, nonCoherent bool) *host {
	t.Helper()
	m := sim.NewMachine(sim.Config{VTd: vtd.QEMU(), NonCoherentDMA: nonCoherent})
	a := pci.Addr{Dev: 2}
	// DeferRx: frames wait in the model's packet buffer until this
	// machine's receive path touches the device, so the ring is written on
	// the goroutine that reads it, as one CPU sees its NIC.
	model, err := m82574.Plug(m, a, m82574.Options{MAC: [6]byte{0x02, 0, 0, 0, 0, last}, DeferRx: true})
	if err != nil {
		t.Fatal(err)
	}
	model.Attach(end)
	unit, err := iommu.New(m.VTdRegs(), m.Mem, iommu.Options{Clock: m.Clock})
	if err != nil {
		t.Fatal(err)
	}
	res, err := probe.Bind(probe.Platform{
		Config: m.Bus,
		BAR:    func(f *pci.Function, bar int) (kernel.Regs, error) { return m.Bus.Regs(f.Addr, bar) },
		IOMMU:  unit, Memory: m.Mem, Clock: m.Clock,
	})
	if err != nil || res.Err() != nil || len(res.NICs()) != 1 {
		t.Fatal(err, res.Err())
	}
	n := res.NICs()[0]
	addr := netip.MustParsePrefix(fmt.Sprintf("10.9.0.%d/24", last))
	s, err := netstack.NewStack(netstack.StackOptions{}, netstack.Interface{NIC: n, Addrs: []netip.Prefix{addr}})
	if err != nil {
		t.Fatal(err)
	}
	return &host{m: m, unit: unit, nic: n, stack: s}
}

// transfer sends size bytes from one host to the other over TCP and
// compares SHA-256 sums.
func transfer(t *testing.T, from, to *host, toAddr tcpip.Address, port uint16, size int) {
	t.Helper()
	transferWith(t, from, to, toAddr, port, size, nil)
}

// transferWith is transfer with midway called once half the data is
// written.
func transferWith(t *testing.T, from, to *host, toAddr tcpip.Address, port uint16, size int, midway func()) {
	t.Helper()
	ln, err := gonet.ListenTCP(to.stack.Stack, tcpip.FullAddress{NIC: 1, Port: port}, ipv4.ProtocolNumber)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	sums := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			sums <- nil
			return
		}
		defer c.Close()
		h := sha256.New()
		io.Copy(h, c)
		sums <- h.Sum(nil)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := gonet.DialContextTCP(ctx, from.stack.Stack, tcpip.FullAddress{NIC: 1, Addr: toAddr, Port: port}, ipv4.ProtocolNumber)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	chunk := make([]byte, 64<<10)
	for sent := 0; sent < size; sent += len(chunk) {
		if midway != nil && sent >= size/2 {
			midway()
			midway = nil
		}
		for i := range chunk {
			chunk[i] = byte(sent>>16) ^ byte(i*31)
		}
		h.Write(chunk)
		if _, err := c.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	if got := <-sums; !bytes.Equal(got, h.Sum(nil)) {
		t.Fatalf("sha256 of %d bytes differs", size)
	}
}

// TestEndToEndLinkDropMidTransfer: the link falls from 1000 to 100 Mb/s in
// the middle of a TCP transfer whose connection chose GSO while TSO was on.
// The connection survives, the driver segments in software from then on,
// and the capture holds no frame above the MTU.
func TestEndToEndLinkDropMidTransfer(t *testing.T) {
	size := 32 << 20
	if testing.Short() || raceOn {
		size = 8 << 20
	}
	var capture bytes.Buffer
	w, err := wire.New(wire.Options{Pcap: &capture})
	if err != nil {
		t.Fatal(err)
	}
	a := newHost(t, w.A(), 1, false)
	b := newHost(t, w.B(), 2, false)
	transferWith(t, a, b, tcpip.AddrFrom4([4]byte{10, 9, 0, 2}), 5003, size, func() {
		if err := w.SetLink(true, 100); err != nil {
			t.Fatal(err)
		}
	})
	stats := map[string]uint64{}
	for _, s := range a.nic.Stats() {
		stats[s.Name] = s.Value
	}
	if a.nic.Link().SpeedMbps != 100 || a.nic.Features().TSOv4 {
		t.Errorf("after the drop: link %+v features %+v", a.nic.Link(), a.nic.Features())
	}
	if stats["tx_tso"] == 0 || stats["tx_soft_gso"] == 0 {
		t.Errorf("tx_tso %d tx_soft_gso %d: want both paths used", stats["tx_tso"], stats["tx_soft_gso"])
	}
	// Stop all traffic before reading the capture the wire writes.
	a.stack.Close()
	b.stack.Close()
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
