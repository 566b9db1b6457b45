package system

import (
	"context"
	"fmt"
	"math/bits"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/ether9/ether9/netstack/ntp"
)

// The wall clock comes from NTP: the servers of ether9.ntp, else those
// the first NIC's lease names. It is set when the platform can set it
// (Platform.SetClock) and kept as an offset otherwise (System.Now), said
// on the console, and checked again every ntpResync. A machine whose
// servers do not answer keeps asking, with back-off, for as long as it
// runs. NTP carries no credential: only servers the operator named or
// the network's DHCP server offered are asked.
const (
	ntpTimeout    = 3 * time.Second
	ntpResync     = time.Hour
	ntpBackoff    = 2 * time.Second
	ntpBackoffMax = 10 * time.Minute
)

// wallClock is what NTP last said.
type wallClock struct {
	mu     sync.Mutex
	offset time.Duration // to add to time.Now where the platform's clock is not set
	last   *ntp.Result
	setAt  time.Duration // uptime of the last answer
	set    bool          // the platform's clock was set
	err    error         // the last failure, nil after an answer
}

// Now is the wall-clock time: the platform's clock, corrected by NTP
// where the platform could not be set.
func (s *System) Now() time.Time {
	s.clock.mu.Lock()
	defer s.clock.mu.Unlock()
	return time.Now().Add(s.clock.offset)
}

// ntpServers are the servers to ask: the command line's, else the
// lease's (waiting for one). nil when there are none to wait for.
func (s *System) ntpServers(ctx context.Context) []netip.AddrPort {
	if len(s.opt.NTP) > 0 {
		return s.opt.NTP
	}
	if s.stack.DHCP(0) == nil {
		return nil
	}
	l, err := s.stack.WaitLease(ctx, 0)
	if err != nil {
		return nil
	}
	var out []netip.AddrPort
	for _, a := range l.NTP {
		out = append(out, netip.AddrPortFrom(a, ntp.Port))
	}
	return out
}

// keepTime is the "ntp" service.
func (s *System) keepTime(ctx context.Context) error {
	backoff, failures := ntpBackoff, 0
	for ctx.Err() == nil {
		servers := s.ntpServers(ctx)
		if len(servers) == 0 {
			if ctx.Err() == nil && len(s.opt.NTP) == 0 && s.stack.DHCP(0) != nil {
				// The lease names no server: look again when it changes.
				s.sleep(ctx, ntpResync)
				continue
			}
			return nil
		}
		var errs []string
		var r *ntp.Result
		for _, srv := range servers {
			res, err := ntp.Query(s.stack.Stack, srv, ntpTimeout)
			if err == nil {
				r = res
				break
			}
			errs = append(errs, err.Error())
		}
		if r == nil {
			failures++
			err := fmt.Errorf("no NTP server answered: %s", strings.Join(errs, "; "))
			s.clock.mu.Lock()
			s.clock.err = err
			s.clock.mu.Unlock()
			if bits.OnesCount(uint(failures)) == 1 {
				s.logf("ntp: %v (failure %d); again in %v", err, failures, backoff)
			}
			s.sleep(ctx, backoff)
			backoff = min(2*backoff, ntpBackoffMax)
			continue
		}
		backoff, failures = ntpBackoff, 0
		s.applyTime(r)
		s.sleep(ctx, ntpResync)
	}
	return nil
}

func (s *System) sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// applyTime sets the clock from r, or keeps the offset.
func (s *System) applyTime(r *ntp.Result) {
	now := time.Now().Add(r.Offset)
	set := false
	var err error
	if s.plat.SetClock != nil {
		if err = s.plat.SetClock(now); err == nil {
			set = true
		}
	}
	s.clock.mu.Lock()
	first := s.clock.last == nil
	s.clock.last, s.clock.setAt, s.clock.set, s.clock.err = r, s.Uptime(), set, err
	if set {
		s.clock.offset = 0
	} else {
		s.clock.offset = r.Offset
	}
	s.clock.mu.Unlock()
	off := r.Offset.Round(time.Millisecond)
	switch {
	case set && (first || off.Abs() >= time.Second):
		s.logf("ntp: clock set to %s from %v (it was off by %v)", now.UTC().Format(time.RFC3339), r.Server, off)
	case !set && first:
		reason := "the platform's clock is not set"
		if err != nil {
			reason = err.Error()
		}
		s.logf("ntp: time %s from %v (off by %v), kept as an offset: %s", now.UTC().Format(time.RFC3339), r.Server, off, reason)
	}
}

// timeText is /dev/time.
func (s *System) timeText() string {
	now := s.Now()
	s.clock.mu.Lock()
	defer s.clock.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "now %s\n", now.UTC().Format(time.RFC3339Nano))
	if r := s.clock.last; r != nil {
		fmt.Fprintf(&b, "source ntp %v\nstratum %d\noffset %v\nrtt %v\nsynced_at %v\n", r.Server, r.Stratum, r.Offset, r.RTT, s.clock.setAt.Round(time.Millisecond))
		if s.clock.set {
			b.WriteString("clock set\n")
		} else {
			fmt.Fprintf(&b, "clock kept as an offset of %v\n", s.clock.offset)
		}
	} else {
		b.WriteString("source none\n")
	}
	if s.clock.err != nil {
		fmt.Fprintf(&b, "error %v\n", s.clock.err)
	}
	return b.String()
}
