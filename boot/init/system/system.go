// Package system builds a running ether9 on a platform: it enumerates PCI,
// takes the VT-d units that cover the NICs, gives each NIC its own DMA
// domain on the unit whose device scope holds it, probes the
// drivers, starts the gVisor stack with DHCP or a static address, and runs
// the services (HTTP status page, fault reporting, a first ping). The same
// code runs as PID 1 on Linux and as an ordinary process on the simulated
// machine; only the Platform differs.
package system

import (
	"context"
	"fmt"
	"net/netip"
	"runtime"
	"strings"
	"time"

	"github.com/ether9/ether9/boot/init/services"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/probe"
	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/iommu"
	"github.com/ether9/ether9/netstack"
	"github.com/ether9/ether9/ns"
	"github.com/ether9/ether9/ns/admin"
	"github.com/ether9/ether9/ns/bind"
	"github.com/ether9/ether9/pci"
)

// Platform is how the system reaches the machine.
type Platform struct {
	Name   string // "linux", "sim"
	Config pci.Config
	Memory kernel.Memory
	Clock  kernel.Clock
	// DMAR is the ACPI DMAR table; nil when the machine has no VT-d.
	DMAR []byte
	// MapUnit maps the register window of the VT-d unit at base. It is
	// called only for units that cover a NIC a driver claims.
	MapUnit func(base uint64) (kernel.Regs, error)
	// MapBAR maps a memory BAR of a function as enumeration left it.
	MapBAR func(f *pci.Function, bar int) (kernel.Regs, error)
	// PCIWindow, when set, is where the memory BARs that firmware left
	// unassigned get their addresses (pci.Options.Assign); nil where
	// firmware or Linux assigned them all.
	PCIWindow *pci.MemWindow
	// IRQ is how a function's driver waits for work.
	IRQ func(a pci.Addr) kernel.Waiter
	// MSI hands out an interrupt vector for a device of the platform's
	// own that signals with a message, the VT-d unit's fault event; nil
	// where there is none to have (the faults are then looked for).
	MSI func() (kernel.MSI, error)
	// RemapInterrupts asks each VT-d unit brought up to remap interrupts
	// where it can (ECAP.IR and ECAP.QI): a NIC's messages then name
	// entries that deliver its own vectors, from it alone, and it can
	// raise no other. Only a platform that owns interrupt delivery may
	// ask: remapping blocks the compatibility-format messages Linux
	// programs its I/O APIC with.
	RemapInterrupts bool
	// AfterFirmware says nothing but firmware ran before the system (no
	// kernel beneath it), so what firmware left running is the system's
	// to take over: a VT-d unit's invalidation queue and interrupt
	// remapping (iommu.Options.TakeOver), a USB controller it drives
	// from SMM (package usblegacy). Where a kernel runs beneath, those
	// are its own, and left alone.
	AfterFirmware bool
	// X2APIC says the processors run their local APICs in x2APIC mode
	// (SDM 11.12), as firmware on many servers leaves them: a unit then
	// remaps interrupts only in extended mode (ECAP.EIM), its entries
	// naming 32-bit x2APIC ids.
	X2APIC bool
	// Lines are the platform's own interrupts through an I/O APIC (the
	// console's): a unit that remaps a line's I/O APIC moves it onto an
	// entry, and one that would block a line it cannot move remaps
	// nothing.
	Lines []Line
	// SetClock sets the wall clock; nil where the platform's clock is
	// not ours to set (the time is then kept as an offset).
	SetClock func(time.Time) error
	// Halt powers the machine off, or restarts it; nil where the machine
	// cannot be stopped from inside.
	Halt func(reboot bool) error
	// KernelStats renders the kernel beneath's own counters (system
	// calls, interrupts, page faults, idle time), served as /dev/kstat
	// beside the Go runtime's /dev/sysstat; nil where there are none to
	// read.
	KernelStats func() (string, error)
}

// Line is one of the platform's own interrupts through an I/O APIC.
type Line struct {
	Name    string        // "console"
	IOAPIC  uint8         // the I/O APIC's id, as the DMAR names it
	Message iommu.Message // as the I/O APIC sends it, compatibility format
	// Route has the I/O APIC send it in remappable format, naming entry.
	Route func(entry uint16) error
}

// Port is one bound network controller.
type Port struct {
	Func   *pci.Function
	NIC    nic.NIC
	Domain *iommu.Domain // nil with translation off
	IOMMU  uint64        // register base of the unit that holds Domain
	// IRQ is the interrupt the driver sleeps on; nil when it polls or
	// has Vectors.
	IRQ kernel.Waiter
	// Vectors are the MSI-X vectors its queues (and, last, its link)
	// sleep on; nil without MSI-X.
	Vectors []kernel.MSI
}

// System is a running ether9.
type System struct {
	plat  Platform
	opt   Options
	logf  func(format string, args ...any)
	boot  time.Duration // Clock.Now at Start
	epoch time.Time     // the idle tick counts from here (idleTick)
	sup   *services.Supervisor
	funcs []*pci.Function
	// The DMAR table's units; each is brought up when the first NIC it
	// covers binds.
	remap *Remapper
	ports []Port
	stack *netstack.Stack
	ns    *ns.Namespace
	kmesg *bind.Kmesg
	guard *admin.Guard // what control over the network must pass
	// work is signalled after polls that found frames: the fault
	// watcher looks at the units then.
	work chan struct{}
	// down says why there is no network stack; nil with one.
	down error
	// clock is what NTP said (clock.go).
	clock wallClock
}

// Start brings the system up on p and starts its services. logf receives
// the console lines, one fact per line. Failures of single parts (a
// function that cannot be read, a NIC whose probe fails, no VT-d unit) are
// reported and the rest goes on. No failure of the network stops it: with
// no NIC at all the namespace still serves the console (Serving says
// why); Start fails only when the platform cannot reach PCI.
func Start(ctx context.Context, p Platform, opt Options, logf func(format string, args ...any)) (*System, error) {
	if p.Clock == nil {
		p.Clock = kernel.NewWallClock()
	}
	// /dev/kmesg keeps what the console shows.
	kmesg := bind.NewKmesg(kmesgLines)
	console := logf
	logf = func(format string, args ...any) {
		kmesg.Add(fmt.Sprintf(format, args...))
		console(format, args...)
	}
	if p.RemapInterrupts && !opt.IntRemap {
		p.RemapInterrupts = false
		logf("iommu: interrupts not remapped (ether9.intremap=off)")
	}
	s := &System{
		plat:  p,
		opt:   opt,
		logf:  logf,
		boot:  p.Clock.Now(),
		epoch: opt.IdleEpoch,
		sup:   services.New(logf, 100*time.Millisecond, 5*time.Second),
		kmesg: kmesg,
		remap: NewRemapper(p, opt.IOMMU, logf),
		work:  make(chan struct{}, 1),
	}
	if s.epoch.IsZero() {
		s.epoch = time.Now()
	}
	tok := opt.Token
	if !tok.Valid() {
		var err error
		if tok, err = admin.NewToken(); err != nil {
			return nil, fmt.Errorf("system: %w", err)
		}
		// The console alone: /dev/kmesg is readable over the network.
		console("admin: token %s (drawn at boot; ether9.token= sets one)", tok)
	}
	s.guard = admin.NewGuard(tok, logf)
	s.guard.Restrict(opt.Admin, s.nicOf)
	if err := s.bind(); err != nil {
		return nil, err
	}
	if len(s.ports) == 0 {
		s.down = fmt.Errorf("system: no network controller could be brought up (%d PCI functions)", len(s.funcs))
	} else if err := s.startStack(); err != nil {
		s.down = err
	}
	if s.down != nil {
		s.logf("%v; the console stays up", s.down)
	}
	s.buildNamespace()
	s.startServices(ctx)
	return s, nil
}

// Wait blocks until every service has stopped (ctx of Start done).
func (s *System) Wait() { s.sup.Wait() }

// Serving is nil when the network stack runs, else why it does not: the
// console and the namespace are all there is.
func (s *System) Serving() error { return s.down }

// Stack is the gVisor stack, for tools that add services of their own.
func (s *System) Stack() *netstack.Stack { return s.stack }

// Ports lists the bound network controllers.
func (s *System) Ports() []Port { return s.ports }

// Uptime is the time since Start.
func (s *System) Uptime() time.Duration { return s.plat.Clock.Now() - s.boot }

// bind enumerates PCI and probes every NIC a driver claims, each with its
// own DMA domain. A NIC that fails is reported and skipped.
func (s *System) bind() error {
	if s.plat.Config == nil || s.plat.MapBAR == nil {
		return fmt.Errorf("system: platform has no PCI config access or BAR windows")
	}
	pp := probe.Platform{
		Config: s.plat.Config,
		BAR:    s.plat.MapBAR,
		// The unit whose scope holds the NIC, or untranslated DMA.
		IOMMUFor: s.remap.UnitFor,
		Memory:   s.plat.Memory,
		Clock:    s.plat.Clock,
		Queues:   queuePairs(s.opt.Queues),
		Logf:     s.logf,
		Enum:     pci.Options{Assign: s.plat.PCIWindow},
	}
	switch {
	case s.plat.IRQ == nil && s.plat.MSI == nil:
	case !s.opt.IRQ:
		// Polling on purpose: the way to compare the two on one machine.
		s.logf("irq: off (ether9.irq=off): every NIC polls")
	default:
		if s.plat.IRQ != nil {
			pp.IRQ = func(f *pci.Function) kernel.Waiter { return s.plat.IRQ(f.Addr) }
		}
		pp.MSI, pp.OneVector = s.plat.MSI, !s.opt.MSIX
	}
	res, err := probe.Bind(pp)
	if err != nil {
		return fmt.Errorf("system: %w", err)
	}
	s.remap.ReportIdle()
	for _, f := range res.Functions {
		s.logf("%v", f)
		for _, b := range f.BARs {
			if b.Assigned {
				s.logf("pci %v: %v", f.Addr, b)
			}
		}
		if isUSB(f) && s.plat.AfterFirmware {
			s.takeUSB(f)
		}
	}
	s.funcs = res.Functions
	for _, b := range res.Bound {
		if b.Err != nil {
			continue // probe.Bind reported it
		}
		p := Port{Func: b.Func, NIC: b.NIC, IRQ: b.IRQ, Vectors: b.Vectors}
		if dom, ok := b.DMA.(*iommu.Domain); ok {
			base, _ := s.remap.UnitOf(b.Func.Addr)
			p.Domain, p.IOMMU = dom, base
		}
		s.logf("%s: %s at %v mac %s", b.NIC.Name(), b.Driver, b.Func.Addr, macString(b.NIC.MAC()))
		if p.interrupts() {
			s.logf("%s irq: %s, spin %v", b.NIC.Name(), p.irqString(), s.opt.Spin)
		} else {
			s.logf("%s irq: %s", b.NIC.Name(), p.irqString())
		}
		s.ports = append(s.ports, p)
	}
	return nil
}

// A NIC with an interrupt polls for Options.Spin after its last frame
// (defaultSpin unless ether9.spin says otherwise), then sleeps on the
// interrupt for up to idleWaitIRQ: the spin saves the interrupt's round
// trip between the frames of a burst, and costs the CPU it spins for
// after the last one. 5 ms: a request that follows its connection's last
// response within it needs no interrupt, which in QEMU costs more than
// the spin (0-byte GETs on one connection against 1 ms, medians of two
// sweeps: igb 1.24, e1000e 1.09; a spin of 0 served 0.34 to 0.82 as
// many). maxSpin bounds the knob at netstack's default idle threshold,
// past which a loop's waits would stop being the interrupt's.
const (
	defaultSpin = 5 * time.Millisecond
	maxSpin     = time.Second
	idleWaitIRQ = idleTickPeriod
)

// queuePairs is how many queue pairs each multi-queue NIC brings up:
// ether9.queues if set, else one per CPU the Go runtime schedules on, as
// Linux's igb sizes its RSS queues. With more queues than CPUs nothing
// runs in parallel, and a flow is received on the queue RSS picks and
// sent on the one its hash picks, two poll loops where one would do: on
// one CPU, an igb with four queues cost QEMU 36.4 ms per MB pushed
// against 32.2 with one (medians of three alternated boots).
func queuePairs(asked int) int {
	if asked > 0 {
		return asked
	}
	return runtime.GOMAXPROCS(0)
}

// maxQueuePairs bounds ether9.queues: more than any part has (the
// drivers bring up at most their own limit).
const maxQueuePairs = 64

// idleTickPeriod is how often an idle machine wakes: the NIC loops on
// their interrupt time out and the VT-d fault registers are read at the
// same instants, every second from Start (polling loops wait for a
// divisor of it, netstack's IdleWait of 20 ms, on the same clock).
const idleTickPeriod = time.Second

// idleTick is the clock every periodic wait of an idle machine ends on.
func (s *System) idleTick() netstack.IdleTick {
	return netstack.IdleTick{Epoch: s.epoch, Period: idleTickPeriod}
}

// irqPacing sets the poll pacing of a NIC on its interrupt: spin, then
// sleep until the interrupt or the next idle tick.
func irqPacing(o *netstack.Options, spin time.Duration) {
	if spin > 0 {
		o.Spin, o.IdleAfter = spin, spin
	} else {
		// No spin at all: the first empty poll sleeps (netstack's
		// zero values mean its defaults).
		o.Spin, o.IdleAfter = -1, time.Nanosecond
	}
	o.IdleWait = idleWaitIRQ
}

// irqString says how a driver waits: the interrupt's name, or polling.
// interrupts reports whether the port's loops sleep on an interrupt:
// its one, or its MSI-X vectors.
func (p Port) interrupts() bool { return p.IRQ != nil || p.Vectors != nil }

// irqString names the port's interrupts: "MSI-X, 3 vectors (48 49 50)",
// or its one interrupt.
func (p Port) irqString() string {
	if p.Vectors == nil {
		return irqString(p.IRQ)
	}
	v := make([]string, len(p.Vectors))
	for i, m := range p.Vectors {
		v[i] = fmt.Sprint(m.Vector())
	}
	return fmt.Sprintf("MSI-X, %d vectors (%s)", len(p.Vectors), strings.Join(v, " "))
}

func irqString(w kernel.Waiter) string {
	switch w := w.(type) {
	case nil:
		return "none (polling)"
	case fmt.Stringer:
		return w.String()
	default:
		return fmt.Sprintf("%T", w)
	}
}

// worked tells the fault watcher that a poll found frames.
func (s *System) worked() {
	select {
	case s.work <- struct{}{}:
	default:
	}
}

// txQueueLen is the depth of each NIC's transmit queue
// (netstack.Interface.TxQueue).
const txQueueLen = 1024

func (s *System) startStack() error {
	var ifs []netstack.Interface
	for _, p := range s.ports {
		name := p.NIC.Name()
		if l := p.NIC.Link(); l.Up {
			s.logf("%s: link %v", name, l)
		}
		own := s.opt.NICs[len(ifs)]
		ifc := netstack.Interface{
			NIC:   p.NIC,
			Addrs: own.Addrs,
			DHCP:  s.opt.DHCP && !own.NoDHCP,
			// The endpoint names the NIC in its lines and reports link
			// changes after this first state.
			Endpoint: netstack.Options{Logf: s.logf, OnWork: s.worked, IdleEpoch: s.epoch},
			// Senders queue and one goroutine per driver queue hands
			// their packets over in batches: one TX tail write per batch
			// instead of per packet, which under emulation is the cost
			// that counts.
			TxQueue: txQueueLen,
		}
		if p.interrupts() {
			// The interrupt ends a wait at once, so once the spin after
			// the last frame is over the loop sleeps for the interrupt:
			// a back-off of short timer waits would only wake the
			// machine (500 times in the second after each request,
			// measured), and an idle one need not wake more than once a
			// second.
			irqPacing(&ifc.Endpoint, s.opt.Spin)
		}
		// ether9.ip and ether9.gw belong to the first NIC.
		if len(ifs) == 0 {
			ifc.Gateway = s.opt.Gateway
			if s.opt.IP.IsValid() {
				ifc.Addrs = append([]netip.Prefix{s.opt.IP}, ifc.Addrs...)
			}
		}
		ifs = append(ifs, ifc)
	}
	st, err := netstack.NewStack(netstack.StackOptions{Logf: s.logf, DHCP: s.opt.DHCPTiming}, ifs...)
	if err != nil {
		return fmt.Errorf("system: %w", err)
	}
	s.stack = st
	return nil
}

// DNS is the DNS servers to ask: those the current leases name, then
// those of ether9.dns.
func (s *System) DNS() []netip.Addr {
	var out []netip.Addr
	if s.stack != nil {
		out = s.stack.DNS()
	}
	return append(out, s.opt.DNS...)
}

// gateway is the first NIC's default router: from DHCP, else the command
// line.
func (s *System) gateway() netip.Addr {
	if s.stack != nil {
		if l := s.stack.Lease(0); l != nil && l.Router.IsValid() {
			return l.Router
		}
	}
	return s.opt.Gateway
}

func macString(m [6]byte) string {
	return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5])
}

// Close stops the stack (closing the NICs) and turns translation off on
// every unit. The services stop with the context given to Start.
func (s *System) Close() error {
	if s.stack != nil {
		s.stack.Close()
	}
	if err := s.remap.Disable(); err != nil {
		return fmt.Errorf("system: %w", err)
	}
	return nil
}
