// Command metal is the /init that checks the ring-0 platform's shim from
// Go: goroutines and locks under stress, timers, the garbage collector, a
// nil dereference recovered as a panic, and a goroutine that computes
// without calls, which only async preemption (SIGURG delivered as a
// signal) can take the CPU from. Each check prints "metal-test: ok NAME"
// or "metal-test: FAIL NAME: why"; the last line is "metal-test: done"
// and the machine powers off. The last checks drive the machine through
// kernel/metal, the Go side of the platform, and look at how the shim
// loaded this program.
package main

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/cpu"
	"golang.org/x/sys/unix"

	"github.com/ether9/ether9/internal/sched"
	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/acpi"
	"github.com/ether9/ether9/kernel/metal"
	"github.com/ether9/ether9/pci"
)

func main() {
	fmt.Printf("metal-test: start GOMAXPROCS=%d NumCPU=%d\n", runtime.GOMAXPROCS(0), runtime.NumCPU())
	check("cmdline", cmdline)
	check("goroutines", goroutines)
	check("timers", timers)
	check("gc", collect)
	check("nil", nilDeref)
	check("preempt", preempt)
	check("lapic", lapic)
	check("clock", clock)
	check("refine", refine)
	check("platform", platform)
	check("msi", msi)
	check("epoll", epoll)
	check("sleeps", sleeps)
	check("avx", avx)
	check("image", image)
	fmt.Println("metal-test: done")
	if err := unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF); err != nil {
		fmt.Println("metal-test: power off:", err)
	}
	select {}
}

func check(name string, f func() error) {
	t := time.Now()
	if err := f(); err != nil {
		fmt.Printf("metal-test: FAIL %s: %v\n", name, err)
		return
	}
	fmt.Printf("metal-test: ok %s (%v)\n", name, time.Since(t).Round(time.Microsecond))
}

// cmdline reads the kernel command line the shim serves, and the
// environment it made from it.
func cmdline() error {
	b, err := os.ReadFile("/proc/cmdline")
	if err != nil {
		return err
	}
	if !strings.Contains(string(b), "ether9.test=metal") {
		return fmt.Errorf("/proc/cmdline is %q", b)
	}
	// A NAME=value word in capitals is in the environment, as Linux
	// hands init the words it does not know; the others are not.
	if v := os.Getenv("METAL_TEST"); v != "env" {
		return fmt.Errorf("METAL_TEST is %q, want \"env\" from the command line", v)
	}
	if v, ok := os.LookupEnv("ether9.test"); ok {
		return fmt.Errorf("ether9.test=%s is in the environment", v)
	}
	// The os package reads /proc/self/exe at init; the shim answers it.
	if exe, err := os.Executable(); err != nil || exe != "/init" {
		return fmt.Errorf("os.Executable: %q, %v; want /init", exe, err)
	}
	return nil
}

// goroutines runs 1000 goroutines that take one mutex 100 times each and
// talk over channels.
func goroutines() error {
	var mu sync.Mutex
	var wg sync.WaitGroup
	n := 0
	ch := make(chan int, 16)
	for i := range 1000 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				mu.Lock()
				n++
				mu.Unlock()
			}
			ch <- i
		}()
	}
	sum := 0
	for range 1000 {
		sum += <-ch
	}
	wg.Wait()
	if n != 100000 || sum != 999*1000/2 {
		return fmt.Errorf("counted %d (want 100000), summed %d", n, sum)
	}
	return nil
}

// timers checks that a sleep, a timer and a ticker end no earlier than
// asked (never compared against an upper bound: the host is noisy).
func timers() error {
	t := time.Now()
	time.Sleep(20 * time.Millisecond)
	if d := time.Since(t); d < 20*time.Millisecond {
		return fmt.Errorf("Sleep(20ms) returned after %v", d)
	}
	t = time.Now()
	<-time.After(15 * time.Millisecond)
	if d := time.Since(t); d < 15*time.Millisecond {
		return fmt.Errorf("After(15ms) fired after %v", d)
	}
	// A ticker's ticks are due a whole number of periods after it was
	// made, so the clock starts before NewTicker, not after it.
	t = time.Now()
	tk := time.NewTicker(5 * time.Millisecond)
	defer tk.Stop()
	for range 4 {
		<-tk.C
	}
	if d := time.Since(t); d < 20*time.Millisecond {
		return fmt.Errorf("4 ticks of 5ms took %v", d)
	}
	var wg sync.WaitGroup
	var fired atomic.Int32
	for i := range 200 {
		wg.Add(1)
		time.AfterFunc(time.Duration(i%10)*time.Millisecond, func() { fired.Add(1); wg.Done() })
	}
	wg.Wait()
	if fired.Load() != 200 {
		return fmt.Errorf("%d of 200 timers fired", fired.Load())
	}
	return nil
}

var sink [][]byte

// collect allocates 64 MiB in 1 MiB pieces, keeping 8, and forces GCs:
// the heap must be demand paged and the scavenger's madvise survived.
func collect() error {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range 64 {
		b := make([]byte, 1<<20)
		b[0], b[len(b)-1] = byte(i), byte(i)
		sink = append(sink, b)
		if len(sink) > 8 {
			sink = sink[1:]
		}
	}
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	if after.NumGC-before.NumGC < 2 {
		return fmt.Errorf("%d GCs ran, want 2 or more", after.NumGC-before.NumGC)
	}
	for i, b := range sink {
		want := byte(56 + i)
		if b[0] != want || b[len(b)-1] != want {
			return fmt.Errorf("slice %d holds %d, %d, want %d", i, b[0], b[len(b)-1], want)
		}
	}
	return nil
}

type node struct{ next *node }

// nilDeref dereferences nil: the page fault must come back as SIGSEGV,
// which the runtime turns into a panic that recover catches.
func nilDeref() (err error) {
	defer func() {
		r := recover()
		if e, ok := r.(runtime.Error); !ok || !strings.Contains(e.Error(), "nil pointer dereference") {
			err = fmt.Errorf("recovered %v, want a nil pointer dereference", r)
		}
	}()
	var n *node
	return fmt.Errorf("read %v through nil", n.next)
}

// preempt starts a goroutine that spins without a call or a system call
// and waits for a timer on the same P: only an asynchronous preemption
// lets this goroutine run again.
func preempt() error {
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	var stop atomic.Bool
	var spins atomic.Uint64
	go func() {
		x := uint64(0)
		for !stop.Load() {
			x++
			if x&0xffff == 0 {
				spins.Store(x)
			}
		}
	}()
	runtime.Gosched()
	time.Sleep(30 * time.Millisecond)
	stop.Store(true)
	if spins.Load() == 0 {
		return fmt.Errorf("the spinning goroutine never ran")
	}
	return nil
}

// lapic makes raw system calls for 100 ms, each a trap into the shim
// whose scheduler then decides who runs next and when the LAPIC timer
// fires. The timer is written again only when its deadline moves, not
// once per call: under QEMU TCG each write costs microseconds of the
// host's timer work. With another thread waiting for the CPU the
// deadline is the slice's end, which each call starts again, rounded to
// a millisecond. Two threads make the calls, so that one always waits.
// The loops stop by the clock (the vDSO, no call).
func lapic() error {
	prev := runtime.GOMAXPROCS(2)
	defer runtime.GOMAXPROCS(prev)
	s0, err := metal.ShimStats()
	if err != nil {
		return err
	}
	var calls atomic.Uint64
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for end := time.Now().Add(100 * time.Millisecond); time.Now().Before(end); {
				unix.RawSyscall(unix.SYS_GETPID, 0, 0, 0)
				calls.Add(1)
			}
		}()
	}
	wg.Wait()
	s1, err := metal.ShimStats()
	if err != nil {
		return err
	}
	if n, writes := s1.Syscalls-s0.Syscalls, s1.TimerWrites-s0.TimerWrites; calls.Load() < 1000 || writes*10 > n {
		return fmt.Errorf("%d system calls (%d of them getpid) wrote the LAPIC timer %d times", n, calls.Load(), writes)
	}
	return nil
}

// refine reads the clock through the vDSO, without pause, until a
// second and a fifth after boot: the shim measures the TSC's rate again
// a second after boot (its console says "metal: TSC ... over"), and the
// clock must go on from where it was, never back and without a jump. A
// jump is half a second: the clock follows the host's, and a busy host
// can stop QEMU for a good part of that.
func refine() error {
	var ts unix.Timespec // the one system call: since boot, as the shim counts
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return err
	}
	start := time.Now()
	until := 1200*time.Millisecond - time.Duration(ts.Nano())
	for prev := start; prev.Sub(start) < until; {
		t := time.Now()
		if d := t.Sub(prev); d < 0 || d > 500*time.Millisecond {
			return fmt.Errorf("the monotonic clock stepped by %v at %v after boot", d, time.Duration(ts.Nano())+t.Sub(start))
		}
		prev = t
	}
	return nil
}

// clock checks that wall time is near the RTC's (a date after 2024), that
// the monotonic clock moves, and that the vDSO and the system call agree.
func clock() error {
	now := time.Now()
	if now.Year() < 2024 {
		return fmt.Errorf("wall clock says %v", now)
	}
	t := time.Now()
	for time.Since(t) == 0 {
	}
	// time.Now reads the vDSO; the system call must tell the same time
	// (a minute apart is a wrong offset, not a slow host).
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_REALTIME, &ts); err != nil {
		return err
	}
	if d := time.Unix(ts.Unix()).Sub(time.Now()).Abs(); d > time.Minute {
		return fmt.Errorf("clock_gettime and time.Now are %v apart", d)
	}
	return nil
}

// platform reaches the machine through kernel/metal: PCI configuration
// space both ways (ECAM from MCFG, the legacy ports), the e1000e's BAR0,
// the VT-d unit's registers from the DMAR table, contiguous DMA memory,
// and a pinned heap buffer read back at its physical address.
func platform() error {
	if !metal.Running() {
		return fmt.Errorf("metal.Running is false")
	}
	cfg, err := metal.Config()
	if err != nil {
		return err
	}
	if _, ok := cfg.(*pci.ECAM); !ok {
		return fmt.Errorf("config access is %T, want ECAM from MCFG", cfg)
	}
	ports := pci.NewPorts(pci.CPUPorts{})
	var nic pci.Addr
	found := false
	for dev := uint8(0); dev < 32; dev++ {
		a := pci.Addr{Dev: dev}
		e, err := cfg.ReadConfig(a, 0, 4)
		if err != nil {
			return err
		}
		p, err := ports.ReadConfig(a, 0, 4)
		if err != nil {
			return err
		}
		if e != p {
			return fmt.Errorf("%v: ECAM reads id %#x, the ports %#x", a, e, p)
		}
		if e == 0x10d38086 {
			nic, found = a, true
		}
	}
	if !found {
		return fmt.Errorf("no 8086:10d3 on bus 0")
	}
	// qboot leaves every BAR unassigned: give them addresses from the
	// memory map's PCI hole, as the platform does.
	hole, err := metal.PCIWindow()
	if err != nil {
		return err
	}
	fns, err := pci.Enumerate(cfg, pci.Options{Assign: hole})
	if err != nil {
		return fmt.Errorf("enumerating with BARs assigned in [%#x, %#x): %w", hole.Base, hole.End, err)
	}
	// The BAR as enumeration left it, as the platform maps it.
	i := slices.IndexFunc(fns, func(f *pci.Function) bool { return f.Addr == nic })
	if i < 0 {
		return fmt.Errorf("enumeration missed %v", nic)
	}
	bar, err := metal.MapBAR(fns[i], 0)
	if err != nil {
		return err
	}
	if st := bar.Read32(0x8); st == ^uint32(0) { // STATUS
		return fmt.Errorf("%v BAR0 STATUS reads all ones", nic)
	}

	// A BAR above the identity map (OVMF's 64-bit window starts at
	// 32 GiB or more) fails to map with its address named, not as a
	// fault when the driver first touches it.
	if _, err := metal.MapPhys(32<<30, 4096); !errors.Is(err, metal.ErrNotIdentity) || !strings.Contains(err.Error(), "0x800000000") {
		return fmt.Errorf("MapPhys above the identity map: %v, want ErrNotIdentity naming 0x800000000", err)
	}

	b, err := metal.Table("DMAR")
	if err != nil {
		return err
	}
	dmar, err := acpi.ParseDMAR(b)
	if err != nil {
		return err
	}
	if len(dmar.Units) == 0 {
		return fmt.Errorf("DMAR lists no unit")
	}
	unit, err := metal.MapPhys(dmar.Units[0].Base, 4096)
	if err != nil {
		return err
	}
	if v := unit.Read32(0); v == 0 || v == ^uint32(0) { // VER_REG
		return fmt.Errorf("VT-d unit at %#x: VER_REG %#x", dmar.Units[0].Base, v)
	}

	mem, err := metal.NewMemory()
	if err != nil {
		return err
	}
	r, err := mem.Alloc(64<<10, 2<<20)
	if err != nil {
		return err
	}
	if r.Phys%(2<<20) != 0 || len(r.Buf) != 64<<10 {
		return fmt.Errorf("Alloc(64 KiB, 2 MiB) gave %#x+%d", r.Phys, len(r.Buf))
	}
	for i, c := range r.Buf {
		if c != 0 {
			return fmt.Errorf("Alloc's byte %d is %d, want zeroed memory", i, c)
		}
	}
	if err := mem.Free(r); err != nil {
		return err
	}
	if err := mem.Free(r); err == nil {
		return fmt.Errorf("a second Free of the same region succeeded")
	}

	buf := make([]byte, 3*4096+100)
	for i := range buf {
		buf[i] = byte(i*7 + i>>12*31 + 3) // differs page to page: a page off shows
	}
	segs, err := mem.Pin(buf[50:])
	if err != nil {
		return err
	}
	off := 50
	for _, s := range segs {
		w, err := metal.Window(uint64(s.Phys), s.Len)
		if err != nil {
			return err
		}
		for i := range w {
			if w[i] != buf[off+i] {
				return fmt.Errorf("physical %#x+%d holds %d, the buffer %d", s.Phys, i, w[i], buf[off+i])
			}
		}
		off += s.Len
	}
	if off != len(buf) {
		return fmt.Errorf("segments cover %d bytes, want %d", off-50, len(buf)-50)
	}
	if err := mem.Unpin(buf[50:]); err != nil {
		return err
	}
	if err := mem.Unpin(buf[50:]); err == nil {
		return fmt.Errorf("a second Unpin succeeded")
	}
	return nil
}

// e1000e registers (82574 datasheet, 10.2.4): interrupt cause read (read
// or write 1 to clear), set, mask set and mask clear; LSC is bit 2.
const (
	regICR = 0xc0
	regICS = 0xc8
	regIMS = 0xd0
	regIMC = 0xd8
	icrLSC = 1 << 2
)

// msi points the e1000e's MSI at a vector of the shim and raises the
// interrupt three times from its cause-set register: each must wake
// IRQ.Wait, and once the causes are masked no interrupt may come. A
// fourth is raised while a Wait sleeps, which must sleep in the poller.
func msi() error {
	cfg, err := metal.Config()
	if err != nil {
		return err
	}
	var nic pci.Addr
	found := false
	for dev := uint8(0); dev < 32 && !found; dev++ {
		if id, _ := cfg.ReadConfig(pci.Addr{Dev: dev}, 0, 4); id == 0x10d38086 {
			nic, found = pci.Addr{Dev: dev}, true
		}
	}
	if !found {
		return fmt.Errorf("no 8086:10d3 on bus 0")
	}
	m, ok, err := pci.FindMSI(cfg, nic)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%v has no MSI capability", nic)
	}
	q, err := metal.NewIRQ()
	if err != nil {
		return err
	}
	defer q.Close()
	if q.Wait(0) {
		return fmt.Errorf("vector %d: an interrupt before any was raised", q.Vector())
	}
	bar, err := mapBAR0(cfg, nic)
	if err != nil {
		return err
	}
	bar.Write32(regIMC, ^uint32(0))
	bar.Write32(regICR, ^uint32(0))
	if err := pci.EnableMemory(cfg, nic); err != nil {
		return err
	}
	if err := pci.EnableBusMaster(cfg, nic); err != nil { // an MSI is a memory write by the device
		return err
	}
	if err := m.Program(cfg, nic, q.MSIAddress(), q.MSIData()); err != nil {
		return err
	}
	defer m.Disable(cfg, nic)
	defer bar.Write32(regIMC, ^uint32(0))
	bar.Write32(regIMS, icrLSC)
	for i := range 3 {
		bar.Write32(regICS, icrLSC)
		if !q.Wait(5 * time.Second) {
			return fmt.Errorf("interrupt %d: none in 5 s on vector %d (count %d, ICR %#x)", i+1, q.Vector(), q.Count(), bar.Read32(regICR))
		}
		if icr := bar.Read32(regICR); icr&icrLSC == 0 {
			return fmt.Errorf("interrupt %d: ICR %#x lacks LSC", i+1, icr)
		}
		bar.Write32(regICR, ^uint32(0))
	}
	// QEMU's 82574 may send a cause again later from its throttling
	// timer, so the count may exceed 3 (it may not be less); once every
	// cause is masked and that message has landed, nothing may come.
	bar.Write32(regIMC, ^uint32(0))
	time.Sleep(50 * time.Millisecond)
	q.Wait(0)
	bar.Write32(regICR, ^uint32(0))
	if q.Wait(50 * time.Millisecond) {
		return fmt.Errorf("an interrupt with every cause masked (count %d)", q.Count())
	}
	if n := q.Count(); n < 3 {
		return fmt.Errorf("%d interrupts counted, want 3 or more", n)
	}
	return parkedWait(q, func() {
		bar.Write32(regIMS, icrLSC)
		bar.Write32(regICS, icrLSC)
	})
}

// parkedWait checks that a sleeping Wait is parked in the runtime's
// network poller rather than blocked in a system call, which with one P
// would stop every other goroutine until sysmon took the P back (up to
// 10 ms on a quiet machine), and that raise ends it.
func parkedWait(q *metal.IRQ, raise func()) error {
	read := sched.Goroutines
	sys0, wait0 := read()
	done := make(chan bool, 1)
	go func() { done <- q.Wait(time.Minute) }()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		sys, wait := read()
		if sys > sys0 {
			raise()
			return fmt.Errorf("a sleeping Wait is in a system call (goroutines not in Go %d, before %d)", sys, sys0)
		}
		if wait > wait0 {
			break
		}
		if time.Now().After(deadline) {
			raise()
			return fmt.Errorf("Wait never parked: goroutines waiting %d (before %d), not in Go %d (before %d)", wait, wait0, sys, sys0)
		}
	}
	raise()
	select {
	case fired := <-done:
		if !fired {
			return fmt.Errorf("the parked Wait missed the interrupt on vector %d (count %d)", q.Vector(), q.Count())
		}
	case <-time.After(5 * time.Second):
		return fmt.Errorf("the parked Wait slept through the interrupt on vector %d (count %d)", q.Vector(), q.Count())
	}
	return nil
}

// epoll checks the two kinds of registration the Go runtime makes: level
// (its netpollBreak eventfd), reported while ready, and edge (EPOLLET,
// every network file and the console), reported once per change. An
// always-writable file reported again and again as writable would keep
// the netpoller from ever sleeping.
func epoll() error {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return err
	}
	defer unix.Close(ep)
	edge, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return err
	}
	defer unix.Close(edge)
	level, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return err
	}
	defer unix.Close(level)
	for _, r := range []struct {
		fd     int
		events uint32
	}{{edge, unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLET}, {level, unix.EPOLLIN}} {
		ev := unix.EpollEvent{Events: r.events, Fd: int32(r.fd)}
		if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, r.fd, &ev); err != nil {
			return err
		}
	}
	// poll returns the events of each fd one epoll_wait (no timeout) found.
	poll := func() (map[int32]uint32, error) {
		evs := make([]unix.EpollEvent, 4)
		n, err := unix.EpollWait(ep, evs, 0)
		if err != nil {
			return nil, err
		}
		got := map[int32]uint32{}
		for _, e := range evs[:n] {
			got[e.Fd] = e.Events
		}
		return got, nil
	}
	one := [8]byte{1}
	for _, step := range []struct {
		what        string
		do          func() error
		edge, level uint32 // 0: not reported
	}{
		{"registered", nil, unix.EPOLLOUT, 0},
		{"nothing changed", nil, 0, 0},
		{"both written", func() error {
			if _, err := unix.Write(edge, one[:]); err != nil {
				return err
			}
			_, err := unix.Write(level, one[:])
			return err
		}, unix.EPOLLIN | unix.EPOLLOUT, unix.EPOLLIN},
		{"nothing changed since", nil, 0, unix.EPOLLIN},
	} {
		if step.do != nil {
			if err := step.do(); err != nil {
				return fmt.Errorf("%s: %w", step.what, err)
			}
		}
		got, err := poll()
		if err != nil {
			return fmt.Errorf("%s: epoll_wait: %w", step.what, err)
		}
		if got[int32(edge)] != step.edge || got[int32(level)] != step.level {
			return fmt.Errorf("%s: edge-triggered %#x (want %#x), level-triggered %#x (want %#x)",
				step.what, got[int32(edge)], step.edge, got[int32(level)], step.level)
		}
	}
	return nil
}

// sleeps opens the console as a Go file (the netpoller registers it,
// edge-triggered, and it is always writable) and then sleeps: with every
// goroutine asleep the CPU must halt, not run the netpoller round.
// Spinning, the machine measured idle 0.7% of the time; asleep, nearly
// all of it: at least half of the sleep is asked.
func sleeps() error {
	f, err := os.OpenFile("/dev/console", os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	const nap = 300 * time.Millisecond
	var wg sync.WaitGroup
	for i := range 50 { // timers in the heap, as a busy runtime has
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				time.Sleep(nap/10 + time.Duration(i)*time.Millisecond)
			}
		}()
	}
	s0, err := metal.ShimStats()
	if err != nil {
		return err
	}
	t := time.Now()
	time.Sleep(nap)
	s1, err := metal.ShimStats()
	if err != nil {
		return err
	}
	wall := time.Since(t)
	wg.Wait()
	idle, calls := s1.Idle()-s0.Idle(), s1.Syscalls-s0.Syscalls
	if idle < wall/2 {
		return fmt.Errorf("idle %v of %v asleep, %d system calls, %d timer interrupts: the machine does not halt",
			idle, wall, calls, s1.TimerIRQs-s0.TimerIRQs)
	}
	return nil
}

// avx checks that the shim turned AVX on (the runtime's AVX2 hashing and
// copying are five times faster under TCG) and that each thread's YMM
// registers survive the others: four Ms count bytes at once on one CPU
// (bytes.Count keeps its running counts in YMM registers across its
// AVX2 loop), time sliced by the shim in the middle of that loop, and
// every count and every SHA-256 must be right.
func avx() error {
	if cpu.X86.HasXSAVE && !cpu.X86.HasAVX {
		return fmt.Errorf("the CPU has XSAVE but the runtime sees no AVX: the shim left OSXSAVE or XCR0 off")
	}
	if !cpu.X86.HasAVX2 {
		fmt.Println("metal-test: no AVX2 on this CPU: only the results are checked")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	data := make([]byte, 4<<20)
	for i := range data {
		data[i] = byte(i * 7)
	}
	wantCount := 0
	for _, b := range data {
		if b == 3 {
			wantCount++
		}
	}
	wantSum := sha256.Sum256(data[:256<<10])
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := bytes.Clone(data) // copied with AVX too
			for i := range 12 {
				if n := bytes.Count(buf, []byte{3}); n != wantCount {
					errs <- fmt.Errorf("goroutine %d, count %d: %d, want %d", g, i, n, wantCount)
					return
				}
			}
			if got := sha256.Sum256(buf[:256<<10]); got != wantSum {
				errs <- fmt.Errorf("goroutine %d: sum %x, want %x", g, got[:8], wantSum[:8])
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// mapBAR0 maps the function's BAR0 where its base register says.
func mapBAR0(cfg pci.Config, a pci.Addr) (kernel.Regs, error) {
	bars, err := pci.ReadBARs(cfg, a, true)
	if err != nil {
		return nil, err
	}
	return metal.MapBAR(&pci.Function{Addr: a, BARs: bars}, 0)
}
