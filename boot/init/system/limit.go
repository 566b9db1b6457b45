package system

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"
)

// limitListener accepts at most max connections at a time: past it,
// Accept waits for one to close and new clients wait in the stack's
// backlog, so a flood of clients costs a bounded number of goroutines
// and buffers, and the console, 9P and the data path keep their share.
// (golang.org/x/net/netutil.LimitListener does the same without the
// counters the namespace shows.)
type limitListener struct {
	net.Listener
	slots chan struct{}

	open, peak, accepted atomic.Uint64
}

func newLimitListener(l net.Listener, max int) *limitListener {
	return &limitListener{Listener: l, slots: make(chan struct{}, max)}
}

func (l *limitListener) Accept() (net.Conn, error) {
	l.slots <- struct{}{}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	l.accepted.Add(1)
	n := l.open.Add(1)
	for p := l.peak.Load(); n > p && !l.peak.CompareAndSwap(p, n); p = l.peak.Load() {
	}
	return &limitConn{Conn: c, l: l}, nil
}

// Stats renders the counters, "name value" per line.
func (l *limitListener) Stats() string {
	return fmt.Sprintf("conns %d\nconns_peak %d\nconns_max %d\naccepted %d\n", l.open.Load(), l.peak.Load(), cap(l.slots), l.accepted.Load())
}

type limitConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.open.Add(^uint64(0))
		<-c.l.slots
	})
	return err
}
