package adv

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ether9/ether9/drivers/intr"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/nicstat"
	"github.com/ether9/ether9/drivers/xsk"
	"github.com/ether9/ether9/kernel"
)

// Port is what an igb and an igc device share: the MAC steps, the line
// its queues sleep on, the station address, MTU, link, TSO switch and
// multicast filter, the device counters, and its queue pairs as Pairs.
// A driver's Device embeds it beside its id and policies, and keeps its
// queues (each embedding a Pair) in the order of Pairs.
type Port struct {
	Core    MAC // the MAC steps: its Regs, Clock, Driver, Name and Logf are the device's
	DMA     kernel.DMA
	IRQ     Legacy     // the causes as the line programs them
	Line    *intr.Line // the device's INTx, shared by the queues' poll loops; nil with MSI-X
	Vec     *MSIX      // the device's MSI-X vectors, one a queue pair and one more; nil without
	Station [6]byte    // the MAC address in use
	Geo     Geometry   // every queue pair's

	Pairs     []*Pair
	Mtu       atomic.Int32
	LinkState Link
	TSO       atomic.Bool
	HW        nicstat.Hardware
	Closed    atomic.Bool

	Mc       Multicast  // the receive filter's groups
	FilterMu sync.Mutex // the driver's EtherType and flow filter slots

	// CfgMu serialises changes of the MTU and of how queues receive with
	// binding and closing.
	CfgMu sync.Mutex
	// Relayout, if set, lets queue i re-decide its RX layout after its
	// socket or program changed; CfgMu is held.
	Relayout func(i int) error

	vectors []kernel.MSI // the device's MSI-X vectors (nic.Device.Vectors)
}

// The sizes a frame adds to the MTU: its Ethernet header, one VLAN tag,
// the FCS. RLPML, the longest frame received, counts all three; what
// reaches memory has no FCS (RCTL.SECRC strips it).
const (
	EthHdrLen  = 14
	VLANTagLen = 4
	FCSLen     = 4
	FrameExtra = EthHdrLen + VLANTagLen + FCSLen // RLPML less the MTU

	socketFrameExtra = EthHdrLen + VLANTagLen // the longest frame in a socket's buffer, less the MTU
)

var _ nic.MulticastFilter = (*Port)(nil)

// Open sets p up over dev for driver: the MAC steps over its registers
// and clock with causes, its DMA, its queue pairs' geometry, the MTU,
// TSO on. The driver resets the MAC and reads its address next, then
// adds the queues (AddQueues).
func (p *Port) Open(dev *nic.Device, driver string, causes CauseRegs, geo Geometry, mtu int) {
	p.Core = MAC{Regs: dev.Regs, Clock: dev.Clock, Driver: driver, Name: dev.Name, Logf: dev.Log(), Causes: causes}
	p.DMA, p.Geo, p.vectors = dev.DMA, geo, dev.Vectors
	p.Mtu.Store(int32(mtu))
	p.TSO.Store(true)
}

// QueuePairs is how many queue pairs the device brings up, of the n
// its part has: with MSI-X one less than its vectors (probe enabled as
// many as Vectors asked for), else dev.QueuePairs(n).
func QueuePairs(dev *nic.Device, n int) int {
	if len(dev.Vectors) > 1 {
		return min(n, len(dev.Vectors)-1)
	}
	return dev.QueuePairs(n)
}

// Vectors is the MSI-X vectors a device of n queue pairs asks probe
// for: one a queue pair it brings up (QueuePairs), one for the other
// causes.
func Vectors(dev *nic.Device, n int) int { return dev.QueuePairs(n) + 1 }

// AddQueues makes n queue pairs, in order: newQueue makes queue i's RX
// ring and the queue around it, keeps the queue and returns the Pair it
// embeds with what the Pair is made of (PairConfig); the Pair's TX ring
// and socket side are made here. On an error the ones made are freed.
func (p *Port) AddQueues(n int, newQueue func(i int) (*Pair, PairConfig, error)) error {
	for i := range n {
		q, c, err := newQueue(i)
		if err == nil {
			err = q.Init(c)
		}
		if err != nil {
			p.Free()
			return p.errorf("queue %d: %w", i, err)
		}
		p.Pairs = append(p.Pairs, q)
	}
	return nil
}

// Steps are a family's own bring-up steps, in the order Up runs them.
type Steps struct {
	RSS        func() // the redirection table and key
	PHY        func() // once the link is set up (CTRL.SLU)
	Interrupts func() // the queues' vectors and the line's causes
	Link       func() // the link state read from the device
}

// Up wires the device's MSI-X vectors, or without them its line, its
// queue bits being bits, a link change calling s.Link, and brings the
// device up: receive set-up for
// frames of maxFrame bytes, RSS, TIPG, every queue's TX then RX started,
// the units enabled, the multicast groups (which survive a reset)
// programmed, the link set up and the PHY, the firmware told, the
// interrupts routed, the link read. On an error the queues are freed.
func (p *Port) Up(irq kernel.Waiter, bits []uint32, maxFrame int, tipg uint32, s Steps) error {
	if len(p.vectors) == len(p.Pairs)+1 {
		p.Vec = NewMSIX(&p.Core, p.vectors, s.Link)
	} else {
		p.IRQ = Legacy{M: &p.Core, Queue: bits, OnLink: s.Link}
		p.Line = intr.NewLine(irq, &p.IRQ)
	}
	if err := p.up(maxFrame, tipg, s); err != nil {
		p.Free()
		return err
	}
	if p.Vec != nil {
		p.Vec.Start()
	}
	return nil
}

// Wait is queue pair q's sleep once its ring is empty: on its own
// vector, or on the line the queues share.
func (p *Port) Wait(q int, timeout time.Duration) bool {
	if p.Closed.Load() {
		return false
	}
	if p.Vec != nil {
		return p.Vec.Wait(q, timeout)
	}
	return p.Line.Wait(q, timeout)
}

// up is Up once the line is wired; a reset brings the device up again
// through it.
func (p *Port) up(maxFrame int, tipg uint32, s Steps) error {
	c := &p.Core
	c.PrepareRx(maxFrame)
	s.RSS()
	c.Regs.Write32(TIPG, tipg)
	for _, q := range p.Pairs {
		if err := q.OpenTx(); err != nil {
			return err
		}
		if err := q.hw.StartRx(); err != nil {
			return err
		}
	}
	c.EnableRxTx()
	p.Mc.Program(c.Regs)
	c.SetLinkUp()
	s.PHY()
	c.SetDriverLoaded(true)
	s.Interrupts()
	s.Link()
	return nil
}

// Name implements nic.NIC.
func (p *Port) Name() string { return p.Core.Name }

// MAC implements nic.NIC.
func (p *Port) MAC() [6]byte { return p.Station }

// MTU implements nic.NIC.
func (p *Port) MTU() int { return int(p.Mtu.Load()) }

// Features implements nic.NIC (Features).
func (p *Port) Features() nic.Features { return Features(p.TSO.Load()) }

// Queues implements nic.NIC.
func (p *Port) Queues() []nic.Queue {
	out := make([]nic.Queue, len(p.Pairs))
	for i, q := range p.Pairs {
		out[i] = q.hw
	}
	return out
}

// NumQueues implements xsk.Binder.
func (p *Port) NumQueues() int { return len(p.Pairs) }

// errorf is an error of the device's, its driver and name first; %w
// wraps.
func (p *Port) errorf(format string, a ...any) error {
	return fmt.Errorf("%s %s: "+format, append([]any{p.Core.Driver, p.Core.Name}, a...)...)
}

// Pair is queue pair i, for what a caller does to it: an error wrapping
// xsk.ErrNoQueue if there is none.
func (p *Port) Pair(i int, what string) (*Pair, error) {
	if i < 0 || i >= len(p.Pairs) {
		return nil, p.errorf("%s queue %d of %d: %w", what, i, len(p.Pairs), xsk.ErrNoQueue)
	}
	return p.Pairs[i], nil
}

// PairConfig is what queue pair i of the device is made of: hw, the
// queue that embeds it, and rx, its RX ring. Every packet is copied into
// the TX ring's bounce space (CopyMax).
func (p *Port) PairConfig(i int, hw Hw, rx RxSide) PairConfig {
	return PairConfig{
		MAC: &p.Core, Idx: i, DMA: p.DMA, Closed: &p.Closed, Geo: p.Geo, Rx: rx, Hw: hw,
		Writer: Writer{CopyMax: CopyMax, MTU: p.MTU, TSO: &p.TSO},
	}
}

// AddMulticast implements nic.MulticastFilter (Multicast).
func (p *Port) AddMulticast(mac [6]byte) error { return p.Mc.Add(p.Core.Regs, p.ctlName(), mac) }

// RemoveMulticast implements nic.MulticastFilter.
func (p *Port) RemoveMulticast(mac [6]byte) error {
	return p.Mc.Remove(p.Core.Regs, p.ctlName(), mac)
}

// SetAllMulticast implements nic.MulticastFilter.
func (p *Port) SetAllMulticast(on bool) error {
	p.Mc.SetAll(p.Core.Regs, on)
	return nil
}

func (p *Port) ctlName() string { return p.Core.Driver + " " + p.Core.Name }

// Fields splits a control command into its two words.
func (p *Port) Fields(cmd string) ([]string, error) {
	f := strings.Fields(cmd)
	if len(f) != 2 {
		return nil, p.errorf("ctl %q: want a command and one argument", cmd)
	}
	return f, nil
}

// Ctl runs the control commands both families take, f being the words
// of one (two, checked by the caller): tso on|off, mtu N (through
// setMTU), addmulti MAC, remmulti MAC, allmulti on|off, and debug
// inject-unmapped-rx on queue 0, where frames RSS does not hash land
// (Pair.DebugCtl). ok is false for a command it does not know.
func (p *Port) Ctl(f []string, setMTU func(int) error) (ok bool, err error) {
	switch f[0] {
	case "tso":
		on, err := p.OnOff(f)
		if err == nil {
			p.TSO.Store(on)
		}
		return true, err
	case "mtu":
		n, err := strconv.Atoi(f[1])
		if err != nil {
			return true, p.errorf("mtu %q: not a number", f[1])
		}
		return true, setMTU(n)
	case "addmulti", "remmulti", "allmulti":
		return true, p.Mc.Ctl(p.Core.Regs, p.ctlName(), f[0], f[1])
	case "debug":
		return true, p.Pairs[0].DebugCtl(f[1], p.DMA)
	}
	return false, nil
}

// OnOff parses the on|off argument of command f.
func (p *Port) OnOff(f []string) (bool, error) {
	switch f[1] {
	case "on":
		return true, nil
	case "off":
		return false, nil
	}
	return false, p.errorf("%s %q: want on or off", f[0], f[1])
}

// Stats are the driver's counters summed over the queues (with what
// extra adds for queue i), per-queue frame counts, the line's wake-ups,
// link changes, what tail adds, then the device's counters.
func (p *Port) Stats(extra func(i int, add func(string, uint64)), tail func(add func(string, uint64))) []nic.Stat {
	var out []nic.Stat
	add := func(name string, v uint64) { out = append(out, nic.Stat{Name: name, Value: v}) }
	var sum nicstat.Sum
	for i, q := range p.Pairs {
		q.RxStats.Each(sum.Add)
		extra(i, sum.Add)
		q.Tx.Stats.Each(sum.Add)
		q.X.EachStat(sum.Add)
		if s := q.X.Socket(); s != nil {
			s.Stats.Each(sum.Add)
		}
	}
	sum.Each(add)
	for i, q := range p.Pairs {
		add(nicstat.QueueName(i, "rx_frames"), q.RxStats.Frames.Load())
		add(nicstat.QueueName(i, "tx_packets"), q.Tx.Stats.Packets.Load())
		armed, clean, tail := q.RxRing()
		add(nicstat.QueueName(i, "rx_armed"), uint64(armed))
		add(nicstat.QueueName(i, "rx_clean"), uint64(clean))
		add(nicstat.QueueName(i, "rx_tail"), uint64(tail))
	}
	if p.Vec != nil {
		p.Vec.EachStat(add)
	} else {
		p.Line.EachStat(len(p.Pairs), add)
	}
	add("link_changes", p.LinkState.Changes())
	tail(add)
	if !p.Closed.Load() {
		p.HW.Gather(p.Core.Regs)
	}
	p.HW.Each(add)
	return out
}

// InitStats sets the device counters to gather, less those absent from
// the family, with each queue's RQDPC.
func (p *Port) InitStats(absent ...uint32) {
	qdrop := make([]uint32, len(p.Pairs))
	for i := range qdrop {
		qdrop[i] = QueueReg(RQDPC, i)
	}
	p.HW.Init(nicstat.Table(absent...), qdrop...)
}

// Close stops the device and frees every queue's rings; nothing stays
// mapped. Sockets still bound are unbound first, their frames returned.
func (p *Port) Close() error {
	p.CfgMu.Lock()
	defer p.CfgMu.Unlock()
	if p.Closed.Swap(true) {
		return nil
	}
	if p.Vec != nil {
		p.Vec.Stop()
	}
	p.Core.Shutdown(len(p.Pairs))
	var errs []error
	for _, q := range p.Pairs {
		errs = append(errs, q.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return p.errorf("close: %w", err)
	}
	return nil
}

// Free frees the queues of a device that did not come up.
func (p *Port) Free() {
	for _, q := range p.Pairs {
		q.Free()
	}
	p.Pairs = nil
}

// Bind implements xsk.Binder. In zero-copy mode the frame area is mapped
// once, the queue's own buffers are given up and the RX ring is armed
// from the socket's fill ring.
func (p *Port) Bind(i int, s *xsk.Socket, m xsk.Mode) error {
	err := p.rebind(i, "bind", func(q *Pair) error { return q.Bind(s, m, p.MTU()+socketFrameExtra) })
	if err == nil {
		p.Core.logf("%s: queue %d bound to a socket (%v, %d frames)", p.Name(), i, m, s.Umem.Frames())
	}
	return err
}

// Unbind implements xsk.Binder: the queue goes back to its own buffers.
func (p *Port) Unbind(i int) error { return p.rebind(i, "unbind", (*Pair).Unbind) }

// SetProgram implements xsk.Binder.
func (p *Port) SetProgram(i int, prog xsk.Program) error {
	return p.rebind(i, "program on", func(q *Pair) error {
		q.SetProgram(prog)
		return nil
	})
}

// rebind does change to queue i under CfgMu and lets it re-decide its
// layout.
func (p *Port) rebind(i int, what string, change func(q *Pair) error) error {
	q, err := p.Pair(i, what)
	if err != nil {
		return err
	}
	p.CfgMu.Lock()
	defer p.CfgMu.Unlock()
	if err := change(q); err != nil {
		return p.errorf("%s queue %d: %w", what, i, err)
	}
	if p.Relayout != nil {
		if err := p.Relayout(i); err != nil {
			return p.errorf("%s queue %d: %w", what, i, err)
		}
	}
	return nil
}
