package adv

import (
	"sync"
	"sync/atomic"

	"github.com/ether9/ether9/drivers/nic"
)

// LinkFromStatus decodes STATUS: LU, FD and the resolved speed of 10,
// 100 or 1000 Mb/s.
func LinkFromStatus(s uint32) nic.Link {
	if s&STATUS_LU == 0 {
		return nic.Link{}
	}
	l := nic.Link{Up: true, FullDuplex: s&STATUS_FD != 0}
	switch (s & STATUS_SPEED_MASK) >> STATUS_SPEED_SHIFT {
	case 0:
		l.SpeedMbps = 10
	case 1:
		l.SpeedMbps = 100
	default:
		l.SpeedMbps = 1000
	}
	return l
}

// Link is the link state a driver last read and how often it changed.
// The zero value is a link down.
type Link struct {
	mu      sync.Mutex
	cur     atomic.Pointer[nic.Link]
	changes atomic.Uint64
}

// Load is the link last set.
func (l *Link) Load() nic.Link {
	if p := l.cur.Load(); p != nil {
		return *p
	}
	return nic.Link{}
}

// Set records s and reports whether it differs from the link before.
func (l *Link) Set(s nic.Link) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.Load() == s {
		return false
	}
	l.cur.Store(&s)
	l.changes.Add(1) // after the store: a moved count means the link is in
	return true
}

// Changes counts the changes Set saw.
func (l *Link) Changes() uint64 { return l.changes.Load() }
