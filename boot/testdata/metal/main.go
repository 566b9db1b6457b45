// Command metal is the /init that checks the ring-0 platform's shim from
// Go: goroutines and locks under stress, timers, the garbage collector, a
// nil dereference recovered as a panic, and a goroutine that computes
// without calls, which only async preemption (SIGURG delivered as a
// signal) can take the CPU from. Each check prints "metal-test: ok NAME"
// or "metal-test: FAIL NAME: why"; the last line is "metal-test: done"
// and the machine powers off.
package main

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	fmt.Printf("metal-test: start GOMAXPROCS=%d NumCPU=%d\n", runtime.GOMAXPROCS(0), runtime.NumCPU())
	check("cmdline", cmdline)
	check("goroutines", goroutines)
	check("timers", timers)
	check("gc", collect)
	check("nil", nilDeref)
	check("preempt", preempt)
	check("clock", clock)
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

// cmdline reads the kernel command line the shim serves.
func cmdline() error {
	b, err := os.ReadFile("/proc/cmdline")
	if err != nil {
		return err
	}
	if !strings.Contains(string(b), "ether9.test=metal") {
		return fmt.Errorf("/proc/cmdline is %q", b)
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
	tk := time.NewTicker(5 * time.Millisecond)
	defer tk.Stop()
	t = time.Now()
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

// clock checks that wall time is near the RTC's (a date after 2024) and
// that the monotonic clock moves.
func clock() error {
	now := time.Now()
	if now.Year() < 2024 {
		return fmt.Errorf("wall clock says %v", now)
	}
	t := time.Now()
	for time.Since(t) == 0 {
	}
	return nil
}
