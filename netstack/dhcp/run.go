package dhcp

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// Handler is told what Run did. Each func may be nil; they are called on
// Run's goroutine, one at a time.
type Handler struct {
	// Bound: l is the lease to use now. old is the one it replaces (nil
	// the first time, or after the address was lost); a renewal gives
	// the same address with new times.
	Bound func(old, l *Lease)
	// Unbound: l's address must go (NAK, or the lease ran out). Run
	// starts over with DISCOVER.
	Unbound func(l *Lease, why error)
	// Failed: an acquisition got no lease; the next starts after wait.
	Failed func(err error, wait time.Duration)
	// Retry: a renewal, rebind or reboot got no answer; l is kept.
	Retry func(l *Lease, err error, wait time.Duration)
}

// errExpired is the reason for losing a lease nobody extended.
var errExpired = errors.New("lease expired")

// Run keeps a lease until ctx ends and never gives up: without one it
// sends DISCOVER again after each failure (a NAK too, RFC 2131 section
// 3.1) with back-off; with one it renews at T1, rebinds at T2 and lets
// the address go only at the lease's end or on a NAK. A link that comes
// back up (LinkUp) has the lease checked at once.
func (c *Client) Run(ctx context.Context, h Handler) {
	backoff := c.cfg.Backoff
	for ctx.Err() == nil {
		l := c.Lease()
		if l == nil {
			c.setState("selecting")
			nl, err := c.Acquire(ctx)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				c.n.failures.Add(1)
				// Jitter keeps a room of machines that lost their server
				// together from asking in step.
				wait := backoff - time.Duration(rand.Int64N(int64(backoff)/4+1))
				backoff = min(backoff*2, c.cfg.BackoffMax)
				c.setState("init")
				if h.Failed != nil {
					h.Failed(err, wait)
				}
				c.sleep(ctx, wait, true)
				continue
			}
			backoff = c.cfg.Backoff
			c.bind(h, nil, nl)
			continue
		}
		c.keep(ctx, h, l)
	}
}

// keep waits for l's next deadline (or the link) and acts on it.
func (c *Client) keep(ctx context.Context, h Handler, l *Lease) {
	now := time.Now()
	t1, t2, end := l.Acquired.Add(l.Renew), l.Acquired.Add(l.Rebind), l.Acquired.Add(l.Duration)
	var next time.Time
	switch {
	case now.Before(t1):
		c.setState("bound")
		next = t1
	case now.Before(t2):
		c.setState("renewing")
	case now.Before(end):
		c.setState("rebinding")
	default:
		c.n.expired.Add(1)
		c.unbind(h, l, errExpired)
		return
	}
	linkUp := false
	if !next.IsZero() {
		linkUp = c.sleep(ctx, next.Sub(now), true)
		if ctx.Err() != nil {
			return
		}
		if !linkUp {
			return // T1: the switch above renews
		}
	}
	var nl *Lease
	var err error
	var next2 time.Time // when to try again without an answer
	switch {
	case linkUp:
		c.n.reboots.Add(1)
		nl, err = c.Reboot(ctx, l)
		next2 = t1
	case time.Now().Before(t2):
		c.n.renewals.Add(1)
		nl, err = c.Renew(ctx, l)
		next2 = t2
	default:
		c.n.rebinds.Add(1)
		nl, err = c.Rebind(ctx, l)
		next2 = end
	}
	if ctx.Err() != nil {
		return
	}
	switch {
	case err == nil:
		c.bind(h, l, nl)
	case errors.Is(err, ErrRefused):
		c.unbind(h, l, err)
	default:
		// RFC 2131 section 4.4.5: half the time left to the next
		// deadline, but not more often than MinRetry.
		left := time.Until(next2)
		wait := max(left/2, c.cfg.MinRetry)
		if linkUp || left <= 0 {
			wait = 0 // back to the timers of the lease
		}
		wait = min(wait, max(time.Until(end), 0))
		if h.Retry != nil {
			h.Retry(l, err, wait)
		}
		c.sleep(ctx, wait, false)
	}
}

func (c *Client) bind(h Handler, old, l *Lease) {
	c.mu.Lock()
	c.lease, c.state = l, "bound"
	c.mu.Unlock()
	if h.Bound != nil {
		h.Bound(old, l)
	}
}

func (c *Client) unbind(h Handler, l *Lease, why error) {
	c.mu.Lock()
	c.lease, c.state = nil, "init"
	c.mu.Unlock()
	if h.Unbound != nil {
		h.Unbound(l, why)
	}
}

func (c *Client) setState(s string) {
	c.mu.Lock()
	c.state = s
	c.mu.Unlock()
}

// sleep waits d, or until ctx ends, or (when link) until LinkUp; it says
// whether the link ended it.
func (c *Client) sleep(ctx context.Context, d time.Duration, link bool) bool {
	if d <= 0 {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	var up <-chan struct{}
	if link {
		up = c.link
	}
	select {
	case <-ctx.Done():
	case <-t.C:
	case <-up:
		return true
	}
	return false
}

// Text is the client's state, lease and counters as "name value" lines.
func (c *Client) Text() string {
	c.mu.Lock()
	state, l, last := c.state, c.lease, c.lastRefused
	c.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "state %s\n", state)
	if l != nil {
		b.WriteString(l.Text(time.Now()))
	}
	s := c.Stats()
	for _, x := range []struct {
		k string
		v uint64
	}{
		{"discovers", s.Discovers}, {"offers_refused", s.OffersRefused}, {"requests", s.Requests},
		{"acks", s.Acks}, {"acks_refused", s.AcksRefused}, {"naks", s.Naks}, {"renewals", s.Renewals},
		{"rebinds", s.Rebinds}, {"reboots", s.Reboots}, {"expired", s.Expired}, {"failures", s.Failures},
	} {
		fmt.Fprintf(&b, "%s %d\n", x.k, x.v)
	}
	if last != "" {
		fmt.Fprintf(&b, "last_refused %s\n", last)
	}
	return b.String()
}
