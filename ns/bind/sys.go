package bind

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/ether9/ether9/ns"
)

// Kmesg keeps the last console lines for /dev/kmesg.
type Kmesg struct {
	mu    sync.Mutex
	lines []string
	next  int
	full  bool
}

// NewKmesg keeps up to max lines.
func NewKmesg(max int) *Kmesg {
	if max < 1 {
		max = 1
	}
	return &Kmesg{lines: make([]string, max)}
}

// Add records one console line.
func (k *Kmesg) Add(line string) {
	k.mu.Lock()
	k.lines[k.next] = strings.TrimRight(line, "\n")
	k.next++
	if k.next == len(k.lines) {
		k.next, k.full = 0, true
	}
	k.mu.Unlock()
}

// Read returns the kept lines, oldest first.
func (k *Kmesg) Read() (string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	var b strings.Builder
	if k.full {
		for _, l := range k.lines[k.next:] {
			b.WriteString(l + "\n")
		}
	}
	for _, l := range k.lines[:k.next] {
		b.WriteString(l + "\n")
	}
	return b.String(), nil
}

// Sys registers /dev/kmesg and /dev/sysstat.
func Sys(n *ns.Namespace, k *Kmesg, uptime func() time.Duration) error {
	if err := n.Add("/dev/kmesg", k); err != nil {
		return fmt.Errorf("bind sys: %w", err)
	}
	err := n.Add("/dev/sysstat", ns.Text(func() string {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return fmt.Sprintf("uptime: %.3f\ngoroutines: %d\ncpus: %d\nheap-alloc: %d\nheap-sys: %d\nsys: %d\ngc-cycles: %d\n",
			uptime().Seconds(), runtime.NumGoroutine(), runtime.NumCPU(), m.HeapAlloc, m.HeapSys, m.Sys, m.NumGC)
	}))
	if err != nil {
		return fmt.Errorf("bind sys: %w", err)
	}
	return nil
}
