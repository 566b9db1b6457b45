// Package netstack joins a NIC driver (drivers/nic) to the gVisor TCP/IP
// stack: a link endpoint with a NAPI-like poll loop per queue, batched
// transmit with checksum and segmentation offload, and a stack set-up
// helper with static addressing or DHCP.
package netstack

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/netstack/capture"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// Options tune an Endpoint. The zero value gives the defaults.
type Options struct {
	// Budget is how many frames one Poll may deliver before the loop
	// looks at its other duties (reclaim, link, stop). Default 64.
	Budget int
	// MinWait and MaxWait bound the idle back-off: a queue that stopped
	// moving waits MinWait first and doubles up to MaxWait. Defaults 20 us
	// and 1 ms.
	MinWait, MaxWait time.Duration
	// Spin is how long a queue keeps polling after its last frame before
	// it starts to wait, yielding the processor between polls so the
	// stack's goroutines run. A wait is a timer sleep, which a loaded or
	// emulated machine stretches to milliseconds, so waiting between the
	// packets of one burst costs throughput; an idle queue never spins.
	// Default 1 ms; negative turns spinning off.
	Spin time.Duration
	// IdleAfter and IdleWait let an idle machine sleep: a queue with no
	// frame for IdleAfter waits IdleWait at a time instead of MaxWait,
	// since every wake-up of a polling loop costs CPU time (under QEMU's
	// TCG about a millisecond of the host's). The first frame after such a
	// pause waits up to IdleWait; a device that signals (kernel.Waiter)
	// ends the wait at once. IdleWait also bounds how long Close waits for
	// a poll loop to notice. Defaults 1 s and 20 ms; IdleWait is at least
	// MaxWait.
	IdleAfter, IdleWait time.Duration
	// IdleEpoch is when the idle waits' ticks count from: an idle loop
	// waits until the next multiple of IdleWait after it (IdleTick).
	// Endpoints and the other periodic work of one machine given the
	// same epoch wake it together. Zero: the Attach that started the
	// loops.
	IdleEpoch time.Time
	// TxTimeout is how long WritePackets keeps retrying a full ring before
	// it drops the rest of the batch. Default 50 ms.
	TxTimeout time.Duration
	// CloseTimeout bounds how long Close waits for the poll loops to end.
	// A loop still inside the stack after that (a dispatcher that never
	// returns) closes the driver itself when it ends. Default 5 s.
	CloseTimeout time.Duration
	// LinkCheck is how many busy polls pass between two link state reads;
	// an idle loop reads it at every wake-up. Default 256.
	LinkCheck int
	// NoGRO turns receive coalescing off: every TCP segment goes up the
	// stack on its own instead of being merged with the in-order segments
	// of its flow that the same poll found (see rxPath). SetGRO changes it
	// later.
	NoGRO bool
	// Manual leaves polling to the caller (Endpoint.Poll): Attach starts
	// no loops. For single-threaded runtimes and benchmarks.
	Manual bool
	// OnLink, if set, is called from the poll loop when the link changes.
	// It must not close the endpoint or remove its NIC itself (Close waits
	// for that loop); hand such work to another goroutine.
	OnLink func(nic.Link)
	// OnWork, if set, is called from the poll loop after each poll that
	// found frames, so that work which must follow traffic (looking for
	// DMA faults) needs no timer of its own on an idle machine. It must
	// not block.
	OnWork func()
	// Logf reports link changes and recovered faults. Default: discard.
	Logf func(format string, args ...any)
}

func (o Options) withDefaults() Options {
	if o.Budget <= 0 {
		o.Budget = 64
	}
	if o.MinWait <= 0 {
		o.MinWait = 20 * time.Microsecond
	}
	if o.MaxWait <= 0 {
		o.MaxWait = time.Millisecond
	}
	if o.MaxWait < o.MinWait {
		o.MaxWait = o.MinWait
	}
	if o.Spin == 0 {
		o.Spin = time.Millisecond
	}
	if o.IdleAfter <= 0 {
		o.IdleAfter = time.Second
	}
	if o.IdleWait <= 0 {
		o.IdleWait = 20 * time.Millisecond
	}
	if o.IdleWait < o.MaxWait {
		o.IdleWait = o.MaxWait
	}
	if o.TxTimeout <= 0 {
		o.TxTimeout = 50 * time.Millisecond
	}
	if o.LinkCheck <= 0 {
		o.LinkCheck = 256
	}
	if o.CloseTimeout <= 0 {
		o.CloseTimeout = 5 * time.Second
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	return o
}

// Endpoint is a stack.LinkEndpoint and stack.GSOEndpoint over a nic.NIC.
// It speaks Ethernet itself (the header, ARP hardware type, broadcast and
// multicast classification), so it goes straight into stack.CreateNIC.
//
// The endpoint owns its NIC: Close stops the poll loops, refuses further
// transmits and then closes the driver.
type Endpoint struct {
	nic    nic.NIC
	opt    Options
	queues []*queue
	stats  counters
	groOff atomic.Bool // receive coalescing turned off (Options.NoGRO, SetGRO)
	audit  atomic.Bool // device-verified checksums checked again (SetCsumAudit)
	// capture keeps the frames handed to the stack and to the driver for
	// pcap readers (ctl capture on); off, each batch pays one load.
	capture *capture.Capture

	// fwd is the Stack's, set before Attach; the receive path releases
	// what forwarding held of a packet (forwardHold).
	fwd *forwardHold

	dispatcher atomic.Pointer[dispatcherRef]
	link       atomic.Pointer[nic.Link]
	linkAddr   atomic.Pointer[tcpip.LinkAddress] // read per frame

	mu      sync.Mutex // guards the fields below
	onClose func()
	loops   *loopSet        // the running poll loops, nil when stopped
	done    <-chan struct{} // closed when the most recently started loops have all ended
	closed  bool

	mcMu     sync.Mutex       // guards the multicast fields
	groups   map[[6]byte]bool // groups joined in the driver's filter
	allMulti bool             // all-multicast turned on after a refused group
}

// loopSet is one generation of poll loops, one per queue, started by one
// Attach. A generation starts polling only after the one before it ended,
// so a queue never has two pollers.
type loopSet struct {
	stop  chan struct{} // closed to ask the loops to end
	done  chan struct{} // closed when they all have
	wg    sync.WaitGroup
	epoch time.Time // the loops' shared clock starts here (Options.IdleEpoch)
}

type dispatcherRef struct{ d stack.NetworkDispatcher }

// queue is one driver queue: the lock that serialises its TX side
// (Transmit and Reclaim), as nic.Queue requires, and its receive path,
// which only the queue's poller touches.
type queue struct {
	q      nic.Queue
	mu     sync.Mutex
	closed bool
	rx     rxPath
}

var (
	_ stack.LinkEndpoint = (*Endpoint)(nil)
	_ stack.GSOEndpoint  = (*Endpoint)(nil)
)

// New returns an endpoint over n. It starts polling when a stack attaches
// to it.
func New(n nic.NIC, opt Options) (*Endpoint, error) {
	if n == nil {
		return nil, fmt.Errorf("netstack: new endpoint: nil NIC")
	}
	qs := n.Queues()
	if len(qs) == 0 {
		return nil, fmt.Errorf("netstack: %s: driver offers no queues", n.Name())
	}
	mac := n.MAC()
	e := &Endpoint{nic: n, opt: opt.withDefaults(), capture: capture.New()}
	e.groOff.Store(e.opt.NoGRO)
	la := tcpip.LinkAddress(mac[:])
	e.linkAddr.Store(&la)
	for _, q := range qs {
		if q == nil {
			return nil, fmt.Errorf("netstack: %s: driver returned a nil queue", n.Name())
		}
		e.queues = append(e.queues, e.newQueue(q))
	}
	l := n.Link()
	e.link.Store(&l)
	return e, nil
}

// NIC returns the driver under the endpoint.
func (e *Endpoint) NIC() nic.NIC { return e.nic }

// Link returns the link state last seen by the poll loop.
func (e *Endpoint) Link() nic.Link { return *e.link.Load() }

// MTU implements stack.LinkEndpoint: the driver's MTU, the largest IP
// packet a frame carries.
func (e *Endpoint) MTU() uint32 {
	if m := e.nic.MTU(); m > 0 {
		return uint32(m)
	}
	return 0
}

// SetMTU implements stack.LinkEndpoint. The driver decides what it
// accepts; a refusal leaves the old MTU and is logged.
func (e *Endpoint) SetMTU(mtu uint32) {
	if err := e.nic.SetMTU(int(mtu)); err != nil {
		e.opt.Logf("%s: set mtu %d: %v", e.nic.Name(), mtu, err)
	}
}

// MaxHeaderLength implements stack.LinkEndpoint.
func (*Endpoint) MaxHeaderLength() uint16 { return header.EthernetMinimumSize }

// LinkAddress implements stack.LinkEndpoint.
func (e *Endpoint) LinkAddress() tcpip.LinkAddress { return *e.linkAddr.Load() }

// SetLinkAddress implements stack.LinkEndpoint. It changes the source
// address of outgoing frames only; the driver's receive filter keeps the
// MAC it was probed with.
func (e *Endpoint) SetLinkAddress(addr tcpip.LinkAddress) { e.linkAddr.Store(&addr) }

// Capabilities implements stack.LinkEndpoint from the driver's current
// features.
//
// RX checksum offload is advertised when the driver verifies checksums;
// frames it could not verify (CsumOK false) are checked here before
// delivery, because gVisor applies the capability to every frame.
//
// TX checksum offload is not advertised: to gVisor it means "leave the
// checksum out", which a real NIC cannot honour for IP fragments. TCP
// still gets the driver's checksum insertion through GSO (NeedsCsum).
func (e *Endpoint) Capabilities() stack.LinkEndpointCapabilities {
	c := stack.CapabilityResolutionRequired
	if e.nic.Features().RxChecksum {
		c |= stack.CapabilityRXChecksumOffload
	}
	return c
}

// GSOMaxSize implements stack.GSOEndpoint.
func (e *Endpoint) GSOMaxSize() uint32 {
	f := e.nic.Features()
	if !f.TSOv4 && !f.TSOv6 {
		return stack.GVisorGSOMaxSize
	}
	if f.MaxGSO <= 0 || f.MaxGSO > maxGSO {
		return maxGSO
	}
	return uint32(f.MaxGSO)
}

// maxGSO keeps an IPv4 GSO packet's total length within 16 bits.
const maxGSO = 1<<16 - 1

// SupportedGSO implements stack.GSOEndpoint. With TSO on, TCP hands us
// whole GSO packets for the driver; with TSO off, gVisor segments itself
// and we still get its segments in batches. gVisor asks this once per
// connection: a GSO packet may arrive after TSO went off, and the driver
// then segments it in software (nic.TxPacket's contract).
func (e *Endpoint) SupportedGSO() stack.SupportedGSO {
	f := e.nic.Features()
	if f.TSOv4 || f.TSOv6 {
		return stack.HostGSOSupported
	}
	return stack.GVisorGSOSupported
}

// ARPHardwareType implements stack.LinkEndpoint.
func (*Endpoint) ARPHardwareType() header.ARPHardwareType { return header.ARPHardwareEther }

// AddHeader implements stack.LinkEndpoint: the Ethernet II header.
func (e *Endpoint) AddHeader(pkt *stack.PacketBuffer) {
	src := pkt.EgressRoute.LocalLinkAddress
	if src == "" {
		src = e.LinkAddress()
	}
	eth := header.Ethernet(pkt.LinkHeader().Push(header.EthernetMinimumSize))
	eth.Encode(&header.EthernetFields{
		SrcAddr: src,
		DstAddr: pkt.EgressRoute.RemoteLinkAddress,
		Type:    pkt.NetworkProtocolNumber,
	})
}

// ParseHeader implements stack.LinkEndpoint.
func (*Endpoint) ParseHeader(pkt *stack.PacketBuffer) bool {
	_, ok := pkt.LinkHeader().Consume(header.EthernetMinimumSize)
	return ok
}

// Attach implements stack.LinkEndpoint. A dispatcher starts one poll loop
// per queue; nil asks them to stop and returns at once.
//
// gVisor calls Attach(nil) from RemoveNIC with the stack's lock held, while
// a poll loop may be inside DeliverNetworkPacket waiting for that lock (an
// ICMP or TCP reply looks up a route): Attach must never wait for the
// loops. Close, which gVisor calls without its locks, does.
func (e *Endpoint) Attach(d stack.NetworkDispatcher) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if d == nil {
		e.dispatcher.Store(nil)
		e.stopLoopsLocked()
		return
	}
	e.dispatcher.Store(&dispatcherRef{d})
	if e.closed || e.loops != nil || e.opt.Manual {
		return
	}
	epoch := e.opt.IdleEpoch
	if epoch.IsZero() {
		epoch = time.Now()
	}
	ls := &loopSet{stop: make(chan struct{}), done: make(chan struct{}), epoch: epoch}
	prev := e.done
	ls.wg.Add(len(e.queues))
	for _, q := range e.queues {
		go e.poll(q, ls, prev)
	}
	go func() {
		ls.wg.Wait()
		close(ls.done)
	}()
	e.loops, e.done = ls, ls.done
}

// IsAttached implements stack.LinkEndpoint.
func (e *Endpoint) IsAttached() bool { return e.dispatcher.Load() != nil }

// Wait implements stack.LinkEndpoint: it waits for the poll loops to end
// after Attach(nil) or Close.
func (e *Endpoint) Wait() {
	e.mu.Lock()
	done := e.done
	e.mu.Unlock()
	if done != nil {
		<-done
	}
}

// SetOnCloseAction implements stack.LinkEndpoint.
func (e *Endpoint) SetOnCloseAction(f func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.onClose = f
}

// Close implements stack.LinkEndpoint. It is safe while traffic flows: the
// poll loops stop, transmits in progress finish and later ones are
// refused, completed transmissions are reclaimed and the driver is closed.
// It waits at most CloseTimeout for the loops; a loop that has not ended by
// then closes the driver when it does, so a poller never meets a closed
// driver.
func (e *Endpoint) Close() {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return
	}
	e.closed = true
	e.dispatcher.Store(nil)
	e.stopLoopsLocked()
	done, onClose := e.done, e.onClose
	e.mu.Unlock()

	for _, q := range e.queues {
		q.mu.Lock()
		q.closed = true
		q.q.Reclaim()
		q.mu.Unlock()
	}
	if onClose != nil {
		onClose()
	}
	if done != nil {
		t := time.NewTimer(e.opt.CloseTimeout)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
			e.stats.closeStuck.Add(1)
			e.opt.Logf("%s: close: poll loops still running after %v; the driver closes when they end", e.nic.Name(), e.opt.CloseTimeout)
			go func() {
				<-done
				e.closeNIC()
			}()
			return
		}
	}
	e.closeNIC()
}

func (e *Endpoint) closeNIC() {
	if err := e.nic.Close(); err != nil {
		e.opt.Logf("%s: close: %v", e.nic.Name(), err)
	}
}

// stopLoopsLocked asks the running poll loops to end; it does not wait.
// e.mu is held; the loops never take it.
func (e *Endpoint) stopLoopsLocked() {
	if e.loops == nil {
		return
	}
	close(e.loops.stop)
	e.loops = nil
}

// poll is the NAPI-like loop of one queue: poll up to the budget, reclaim
// finished transmissions, and when a poll finds nothing, wait on the queue
// with a back-off that doubles from MinWait to MaxWait.
func (e *Endpoint) poll(q *queue, ls *loopSet, prev <-chan struct{}) {
	defer ls.wg.Done()
	stop := ls.stop
	if prev != nil {
		select {
		case <-prev:
		case <-stop:
			return
		}
	}
	for !e.pollLoop(q, stop, ls.epoch) {
		// A recovered panic: the loop starts again, after a pause so that
		// a fault that repeats cannot spin, and the machine keeps its
		// network.
		select {
		case <-stop:
			return
		case <-time.After(e.opt.MaxWait):
		}
	}
}

// pollLoop runs until stop is closed (true) or a panic is recovered
// (false). Its clock counts from start, which every loop of the set
// shares.
func (e *Endpoint) pollLoop(q *queue, stop <-chan struct{}, start time.Time) (stopped bool) {
	defer func() {
		if r := recover(); r != nil {
			q.rx.reset()
			e.stats.pollPanics.Add(1)
			e.opt.Logf("%s: poll loop recovered from panic: %v\n%s", e.nic.Name(), r, debug.Stack())
			stopped = false
		}
	}()
	budget := e.opt.Budget
	busy := 0
	pace := newPacer(e.opt, time.Since(start))
	for {
		select {
		case <-stop:
			return true
		default:
		}
		n := e.pollOnce(q, budget)
		if n > 0 {
			pace.busy(time.Since(start))
			if e.opt.OnWork != nil {
				e.opt.OnWork()
			}
			if n >= budget {
				e.stats.budgetExhausted.Add(1)
			}
			if busy++; busy >= e.opt.LinkCheck {
				busy = 0
				e.checkLink()
			}
			continue
		}
		wait := pace.idle(time.Since(start))
		if wait == 0 {
			e.spin(q, &pace, start)
			continue
		}
		e.checkLink()
		e.stats.idleWaits.Add(1)
		t := time.Now()
		woken := q.q.Wait(wait)
		e.stats.waitNanos.Add(uint64(time.Since(t)))
		if woken {
			pace.woken()
		}
	}
}

// spin yields the processor until q has a frame or the spin time is over.
// A queue without RxReady is simply polled again after one yield.
func (e *Endpoint) spin(q *queue, pace *pacer, start time.Time) {
	r, _ := q.q.(nic.RxReadier)
	for {
		e.stats.spins.Add(1)
		runtime.Gosched()
		if r == nil || r.RxReady() || !pace.spinning(time.Since(start)) {
			return
		}
	}
}

// pacer decides what a poll loop does after a poll that found nothing:
// poll again at once while traffic is recent (Spin), else wait, backing
// off from MinWait to MaxWait, and after IdleAfter without a frame wait
// up to IdleWait. Times are readings of one monotonic clock, which the
// loops of one endpoint share.
type pacer struct {
	spin, idleAfter            time.Duration
	minWait, maxWait, idleWait time.Duration
	wait                       time.Duration // the next back-off wait
	lastWork                   time.Duration // when a poll last found frames
}

// newPacer starts as if a frame had just arrived at now: a loop starts
// when its link comes up, when traffic is likely.
func newPacer(o Options, now time.Duration) pacer {
	return pacer{
		spin: o.Spin, idleAfter: o.IdleAfter,
		minWait: o.MinWait, maxWait: o.MaxWait, idleWait: o.IdleWait,
		wait: o.MinWait, lastWork: now,
	}
}

// busy records a poll that found frames.
func (p *pacer) busy(now time.Duration) {
	p.lastWork = now
	p.wait = p.minWait
}

// idle returns how long to wait after an empty poll at now; 0 means poll
// again at once.
func (p *pacer) idle(now time.Duration) time.Duration {
	switch {
	case p.spinning(now):
		return 0
	case now-p.lastWork >= p.idleAfter:
		return p.toIdleTick(now)
	}
	w := p.wait
	p.wait = min(2*w, p.maxWait)
	return w
}

// toIdleTick is an idle loop's wait: to the next multiple of IdleWait on
// the shared clock, not IdleWait from now. The idle loops of a NIC's
// queues then time out together, and an idle machine wakes once a
// second for all of them instead of once for each (four times for an
// igb). A wait shorter than MinWait runs on to the tick after.
func (p *pacer) toIdleTick(now time.Duration) time.Duration {
	return untilTick(now, p.idleWait, p.minWait)
}

// spinning reports whether traffic at now is recent enough to poll on.
func (p *pacer) spinning(now time.Duration) bool { return now-p.lastWork < p.spin }

// woken records a wait the device ended: work is coming, so the back-off
// starts over.
func (p *pacer) woken() { p.wait = p.minWait }

// Poll runs one pass over queue i, as the poll loops do: it delivers up to
// budget received frames to the attached stack and reclaims finished
// transmissions. With Options.Manual it is how the caller drives the
// endpoint; it must not run concurrently with itself on the same queue.
func (e *Endpoint) Poll(i, budget int) (int, error) {
	if i < 0 || i >= len(e.queues) {
		return 0, fmt.Errorf("netstack: %s: queue %d of %d", e.nic.Name(), i, len(e.queues))
	}
	if budget <= 0 {
		return 0, fmt.Errorf("netstack: %s: poll budget %d", e.nic.Name(), budget)
	}
	return e.pollOnce(e.queues[i], budget), nil
}

func (e *Endpoint) pollOnce(q *queue, budget int) int {
	q.rx.begin(e)
	n := q.rx.receive(q.q, budget)
	q.rx.end()
	e.stats.polls.Add(1)
	q.reclaim()
	return n
}

// checkLink reads the driver's link state and reports a change.
func (e *Endpoint) checkLink() {
	l := e.nic.Link()
	old := e.link.Load()
	if *old == l {
		return
	}
	if !e.link.CompareAndSwap(old, &l) {
		return // another queue's loop reported it
	}
	e.stats.linkChanges.Add(1)
	e.opt.Logf("%s: link %v", e.nic.Name(), l)
	if e.opt.OnLink != nil {
		e.opt.OnLink(l)
	}
}

// reclaim frees completed transmissions under the queue's TX lock.
func (q *queue) reclaim() {
	q.mu.Lock()
	if !q.closed {
		q.q.Reclaim()
	}
	q.mu.Unlock()
}
