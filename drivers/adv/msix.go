package adv

import (
	"sync/atomic"
	"time"

	"github.com/ether9/ether9/drivers/intr"
	"github.com/ether9/ether9/drivers/nicstat"
	"github.com/ether9/ether9/kernel"
)

// MSI-X (82576 datasheet 7.3.1.3 and 7.3.2, I225 datasheet 7.3.2): with
// GPIE.Multiple_MSIX every EICR bit is a vector. IVAR routes queue pair
// q's RX and TX causes to vector q (RouteQueues, as in legacy mode, where
// the same entries name EICR bits), IVAR_MISC the ICR causes (the link
// change) to the last vector, the "other" one. EIAC clears a vector's
// EICR bit as it fires, and EIAM with GPIE.EIAME clears its EIMS bit:
// a queue's vector stays masked from the moment it fires until its loop,
// after polling with its budget and finding the ring empty, sleeps again.
// EITR(n) moderates vector n. GPIE.PBA_support shows the vectors'
// pending bits in the MSI-X PBA; NSICR lets a read of ICR clear it.
//
// No lost edge: a frame that lands while the queue polls sets the
// vector's EICR bit; only firing clears it (EIAC), and the vector cannot
// fire while masked. So the EIMS write of the queue's next sleep finds
// the bit set and the vector fires as the write lands: the sleep ends at
// once. At worst that is one wake-up for a frame the last poll took.
// A sleep that times out masks the vector again (EIMC); an interrupt
// that came between the timeout and the mask is counted by the vector,
// and the next sleep returns at once.

// gpieMSIX is GPIE in MSI-X mode.
const gpieMSIX = GPIE_MULTIPLE_MSIX | GPIE_EIAME | GPIE_PBA | GPIE_NSICR

// otherWait bounds the other vector's sleeps: it wakes for a link change
// or an error cause, which may come at any time, and otherwise must not
// wake an idle machine.
const otherWait = time.Minute

// stopWait bounds how long Stop waits for the other vector's loop.
const stopWait = time.Second

// MSIX is a function's MSI-X vectors as its queues' poll loops and the
// other causes' loop use them: the intr-less counterpart of Legacy and
// intr.Line, one vector per queue pair and one more.
type MSIX struct {
	M       *MAC
	Vectors []kernel.MSI // queue pair q's is Vectors[q]; the last is the other causes'
	OnLink  func()       // called when the other vector fired with LSC

	stats  []intr.QueueStats
	others atomic.Uint64 // the other vector's interrupts, once handled
	closed atomic.Bool
	done   chan struct{}
}

// NewMSIX shares vectors among queues queue pairs and the other causes:
// queues+1 vectors.
func NewMSIX(m *MAC, vectors []kernel.MSI, onLink func()) *MSIX {
	return &MSIX{M: m, Vectors: vectors, OnLink: onLink, stats: make([]intr.QueueStats, len(vectors)-1)}
}

// queues is the number of queue pairs; the other vector is bit queues.
func (x *MSIX) queues() int { return len(x.Vectors) - 1 }

func (x *MSIX) otherBit() uint32 { return 1 << x.queues() }

// Setup puts the function in MSI-X mode: GPIE, each queue pair routed to its vector through slot,
// the other causes to the last vector, every vector auto-cleared and
// auto-masked, each queue's vector moderated with itr, pending causes
// cleared, the link change enabled on the other vector; the queue
// vectors stay masked until their queue sleeps.
func (x *MSIX) Setup(itr uint32, slot IVARSlot) {
	r, c := x.M.Regs, x.M.causes()
	n := x.queues()
	all := x.otherBit()<<1 - 1
	r.Write32(GPIE, gpieMSIX)
	x.M.RouteQueues(n, slot)
	r.Write32(IVAR_MISC, (IVAR_VALID|uint32(n))<<IVAR_MISC_OTHER_SHIFT)
	for q := range n {
		r.Write32(EITR0+4*uint32(q), itr)
	}
	r.Write32(EIMC, ^uint32(0))
	r.Write32(c.IMC, ^uint32(0))
	r.Read32(c.ICR)
	r.Read32(EICR)
	r.Write32(EIAC, all)
	r.Write32(EIAM, all)
	r.Write32(c.IMS, ICR_LSC)
	r.Write32(EIMS, x.otherBit())
}

// Wait is queue q's sleep after a poll found its ring empty: it unmasks
// the queue's vector and sleeps on it until it fires or timeout passes.
func (x *MSIX) Wait(q int, timeout time.Duration) bool {
	bit := uint32(1) << q
	st := &x.stats[q]
	x.M.Regs.Write32(EIMS, bit)
	if x.Vectors[q].Wait(timeout) {
		// EIAM masked the vector as it fired; EIMC makes sure, as
		// QEMU's igb keeps firing it while the loop polls.
		x.M.Regs.Write32(EIMC, bit)
		st.Wakes.Add(1)
		return true
	}
	x.M.Regs.Write32(EIMC, bit)
	st.Timeouts.Add(1)
	return false
}

// Start runs the other vector's loop: each interrupt reads ICR (which
// clears it), reports a link change, and unmasks the vector again.
func (x *MSIX) Start() {
	x.done = make(chan struct{})
	go x.watch()
}

func (x *MSIX) watch() {
	defer close(x.done)
	v := x.Vectors[x.queues()]
	c := x.M.causes()
	for {
		fired := v.Wait(otherWait)
		if x.closed.Load() {
			return
		}
		if !fired {
			continue
		}
		if x.M.Regs.Read32(c.ICR)&ICR_LSC != 0 && x.OnLink != nil {
			x.OnLink()
		}
		// Counted once handled: a reader that sees the count move
		// sees the link it reported.
		x.others.Add(1)
		x.M.Regs.Write32(EIMS, x.otherBit())
	}
}

// Stop ends the other vector's loop before the device stops: it fires
// the vector itself (EICS) to wake the loop, and waits for it a while.
func (x *MSIX) Stop() {
	if x.done == nil || x.closed.Swap(true) {
		return
	}
	x.M.Regs.Write32(EICS, x.otherBit())
	select {
	case <-x.done:
	case <-time.After(stopWait):
		x.M.logf("%s: the other causes' vector did not wake to stop", x.M.Name)
	}
}

// EachStat passes the counters of the queues (qN_irq_wake,
// qN_irq_timeout), their sums (irq_wakes, irq_timeouts), the vectors in
// use (irq_vectors) and the other vector's interrupts (irq_other) to add.
func (x *MSIX) EachStat(add func(name string, v uint64)) {
	var wakes, timeouts uint64
	for q := range x.stats {
		st := &x.stats[q]
		w, to := st.Wakes.Load(), st.Timeouts.Load()
		wakes, timeouts = wakes+w, timeouts+to
		add(nicstat.QueueName(q, "irq_wake"), w)
		add(nicstat.QueueName(q, "irq_timeout"), to)
	}
	add("irq_wakes", wakes)
	add("irq_timeouts", timeouts)
	add("irq_vectors", uint64(len(x.Vectors)))
	add("irq_other", x.others.Load())
}
