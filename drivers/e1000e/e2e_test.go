package e1000e_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net/netip"
	"sync"
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

// mailbox sits between a device model and its end of the wire. Frames
// arriving from the wire wait in the mailbox until the receiving machine
// polls, so the model's receive DMA into the descriptor ring runs on the
// goroutine that reads the ring, as one CPU would see it; the model's
// transmit DMA already runs under the driver's TX lock. Without it the
// sender's goroutine would write the receiver's ring while the receiver
// reads it, which the race detector rightly reports.
type mailbox struct {
	end     *wire.End
	mu      sync.Mutex
	frames  [][]byte
	deliver func([]byte)
	kick    chan struct{}
}

func newMailbox(end *wire.End) *mailbox {
	b := &mailbox{end: end, kick: make(chan struct{}, 1)}
	end.Receive(func(f []byte) {
		b.mu.Lock()
		b.frames = append(b.frames, bytes.Clone(f))
		b.mu.Unlock()
		select {
		case b.kick <- struct{}{}:
		default:
		}
	})
	return b
}

func (b *mailbox) Send(f []byte)                   { b.end.Send(f) }
func (b *mailbox) Receive(fn func([]byte))         { b.mu.Lock(); b.deliver = fn; b.mu.Unlock() }
func (b *mailbox) Link(fn func(up bool, mbps int)) { b.end.Link(fn) }

// drain hands up to max waiting frames to the model, no more than one
// poll cleans, so the ring is not overrun: the mailbox queues like a
// switch port would.
func (b *mailbox) drain(max int) {
	b.mu.Lock()
	n := min(max, len(b.frames))
	frames, deliver := b.frames[:n], b.deliver
	b.frames = b.frames[n:]
	more := len(b.frames) > 0
	b.mu.Unlock()
	for _, f := range frames {
		deliver(f)
	}
	if more {
		select {
		case b.kick <- struct{}{}:
		default:
		}
	}
}

// boxedNIC is the NIC with its queue's Poll and Wait going through the
// mailbox.
type boxedNIC struct {
	nic.NIC
	q nic.Queue
	b *mailbox
}

func (n *boxedNIC) Queues() []nic.Queue { return []nic.Queue{n} }

func (n *boxedNIC) Poll(budget int, deliver func(*nic.RxPacket)) int {
	n.b.drain(budget)
	return n.q.Poll(budget, deliver)
}

func (n *boxedNIC) Transmit(p []*nic.TxPacket) (int, error) { return n.q.Transmit(p) }
func (n *boxedNIC) Reclaim() int                            { return n.q.Reclaim() }

func (n *boxedNIC) Wait(timeout time.Duration) bool {
	select {
	case <-n.b.kick:
		return true
	case <-time.After(timeout):
		return false
	}
}

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
	model, err := m82574.Plug(m, a, m82574.Options{MAC: [6]byte{0x02, 0, 0, 0, 0, last}})
	if err != nil {
		t.Fatal(err)
	}
	box := newMailbox(end)
	model.Attach(box)
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
	inner := res.NICs()[0]
	n := &boxedNIC{NIC: inner, q: inner.Queues()[0], b: box}
	addr := netip.MustParsePrefix(fmt.Sprintf("10.9.0.%d/24", last))
	s, err := netstack.NewStack(netstack.StackOptions{}, netstack.Interface{NIC: n, Addrs: []netip.Prefix{addr}})
	if err != nil {
		t.Fatal(err)
	}
	return &host{m: m, unit: unit, nic: inner, stack: s}
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

// TestEndToEndTCP joins two simulated machines, each an e1000e behind its
// own VT-d unit with a gVisor stack, and moves 64 MiB each way over TCP:
// the driver's TSO and copybreak paths against real TCP, with no VT-d
// fault and every buffer unmapped at the end.
func TestEndToEndTCP(t *testing.T) {
	size := 64 << 20
	if testing.Short() || raceOn {
		size = 8 << 20
	}
	for _, nc := range []bool{false, true} {
		t.Run(fmt.Sprintf("noncoherent=%v", nc), func(t *testing.T) {
			w, err := wire.New(wire.Options{})
			if err != nil {
				t.Fatal(err)
			}
			a := newHost(t, w.A(), 1, nc)
			b := newHost(t, w.B(), 2, nc)
			transfer(t, a, b, tcpip.AddrFrom4([4]byte{10, 9, 0, 2}), 5001, size)
			transfer(t, b, a, tcpip.AddrFrom4([4]byte{10, 9, 0, 1}), 5002, size)
			ab, ba := w.Stats()
			if ab.MaxLen > 1514 || ba.MaxLen > 1514 {
				t.Errorf("frames above the MTU on the wire: %d, %d", ab.MaxLen, ba.MaxLen)
			}
			for _, h := range []*host{a, b} {
				var tso uint64
				for _, s := range h.nic.Stats() {
					if s.Name == "tx_tso" {
						tso = s.Value
					}
				}
				if tso == 0 {
					t.Errorf("%v: no TSO at 1000 Mb/s", h.nic.Name())
				}
				if f := h.unit.Faults(); len(f) != 0 {
					t.Errorf("VT-d faults: %v", f)
				}
			}
			a.stack.Close()
			b.stack.Close()
			for _, h := range []*host{a, b} {
				ms := h.m.Mem.Stats()
				st := h.unit.Stats()
				if ms.Pins != ms.Unpins || st.Maps != st.Unmaps || st.IOVAInUse != 0 {
					t.Errorf("after close: %d pins %d unpins, %d maps %d unmaps, %d IOVA bytes", ms.Pins, ms.Unpins, st.Maps, st.Unmaps, st.IOVAInUse)
				}
			}
		})
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
	defer a.stack.Close()
	defer b.stack.Close()
	transferWith(t, a, b, tcpip.AddrFrom4([4]byte{10, 9, 0, 2}), 5003, size, func() {
		if err := w.SetLink(true, 100); err != nil {
			t.Fatal(err)
		}
	})
	if err := w.Err(); err != nil {
		t.Fatal(err)
	}
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
