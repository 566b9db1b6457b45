// Package wire is the simulated Ethernet cable: it joins two endpoints
// (device models, or a model and a test endpoint), delivers frames both
// ways, carries the link state and speed, and can record everything it
// carries in a pcap file.
//
// Frames on the wire are Ethernet frames from the destination address to
// the end of the payload, without the frame check sequence, the way a
// capture shows them.
package wire

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/ether9/ether9/kernel"
)

// Port is one end of a wire as an attached endpoint sees it.
type Port interface {
	// Send puts a frame on the wire. The far end has received it (or the
	// wire has dropped it) by the time Send returns; the wire keeps no
	// reference to frame.
	Send(frame []byte)
	// Receive installs the function that gets the far end's frames. The
	// frame is only valid during the call.
	Receive(fn func(frame []byte))
}

// LinkPort is a Port that also reports the link state: an endpoint with a
// PHY (a device model) watches it to raise its link-change interrupt.
type LinkPort interface {
	Port
	// Link installs fn, calls it at once with the current state and again
	// on every change.
	Link(fn func(up bool, speedMbps int))
}

// Options configure a wire.
type Options struct {
	// SpeedMbps is the negotiated speed reported to the ends: 10, 100,
	// 1000 or 2500. Zero means 1000.
	SpeedMbps int
	// Pcap, when set, receives a capture of both directions.
	Pcap io.Writer
	// Clock stamps captured frames; nil uses the wall clock.
	Clock kernel.Clock
}

// Stats count what one direction of the wire carried.
type Stats struct {
	Frames  uint64
	Bytes   uint64
	Dropped uint64 // sent while the link was down or the far end had no receiver
	MaxLen  int    // longest frame carried
}

// Wire is a full-duplex point-to-point link.
type Wire struct {
	mu    sync.Mutex
	ends  [2]End
	up    bool
	speed int
	stats [2]Stats
	pcap  *PcapWriter
	clock kernel.Clock
	err   error // first capture error
}

// End is one end of a wire. It implements LinkPort.
type End struct {
	w    *Wire
	side int
	rx   func([]byte)
	link func(up bool, speedMbps int)
}

var errSpeed = errors.New("unsupported link speed")

func checkSpeed(mbps int) error {
	switch mbps {
	case 10, 100, 1000, 2500:
		return nil
	}
	return fmt.Errorf("wire: %d Mb/s: %w", mbps, errSpeed)
}

// New returns a wire whose link is up at the configured speed.
func New(opt Options) (*Wire, error) {
	if opt.SpeedMbps == 0 {
		opt.SpeedMbps = 1000
	}
	if err := checkSpeed(opt.SpeedMbps); err != nil {
		return nil, err
	}
	w := &Wire{up: true, speed: opt.SpeedMbps, clock: opt.Clock}
	if w.clock == nil {
		w.clock = kernel.NewWallClock()
	}
	for i := range w.ends {
		w.ends[i] = End{w: w, side: i}
	}
	if opt.Pcap != nil {
		p, err := NewPcapWriter(opt.Pcap)
		if err != nil {
			return nil, fmt.Errorf("wire: %w", err)
		}
		w.pcap = p
	}
	return w, nil
}

// A and B are the two ends.
func (w *Wire) A() *End { return &w.ends[0] }
func (w *Wire) B() *End { return &w.ends[1] }

// SetLink changes the link state and speed (a cable pulled, a partner
// renegotiating) and tells both ends.
func (w *Wire) SetLink(up bool, speedMbps int) error {
	if err := checkSpeed(speedMbps); err != nil {
		return err
	}
	w.mu.Lock()
	changed := w.up != up || w.speed != speedMbps
	w.up, w.speed = up, speedMbps
	watchers := [2]func(bool, int){w.ends[0].link, w.ends[1].link}
	w.mu.Unlock()
	if changed {
		for _, fn := range watchers {
			if fn != nil {
				fn(up, speedMbps)
			}
		}
	}
	return nil
}

// LinkState reports the link state and speed.
func (w *Wire) LinkState() (up bool, speedMbps int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.up, w.speed
}

// Stats returns the counters of the A-to-B and B-to-A directions.
func (w *Wire) Stats() (aToB, bToA Stats) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stats[0], w.stats[1]
}

// Err returns the first error the capture writer met, if any.
func (w *Wire) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Send implements Port: the frame goes to the other end.
func (e *End) Send(frame []byte) {
	w := e.w
	w.mu.Lock()
	st := &w.stats[e.side]
	peer := w.ends[1-e.side].rx
	if !w.up || peer == nil {
		st.Dropped++
		w.mu.Unlock()
		return
	}
	st.Frames++
	st.Bytes += uint64(len(frame))
	st.MaxLen = max(st.MaxLen, len(frame))
	if w.pcap != nil && w.err == nil {
		if err := w.pcap.WritePacket(w.clock.Now(), frame); err != nil {
			w.err = fmt.Errorf("wire: capture: %w", err)
		}
	}
	w.mu.Unlock()
	// Delivery happens outside the lock so that a receiver may answer at
	// once (an echo endpoint) without deadlocking.
	peer(frame)
}

// Receive implements Port.
func (e *End) Receive(fn func(frame []byte)) {
	e.w.mu.Lock()
	e.rx = fn
	e.w.mu.Unlock()
}

// Link implements LinkPort.
func (e *End) Link(fn func(up bool, speedMbps int)) {
	e.w.mu.Lock()
	e.link = fn
	up, speed := e.w.up, e.w.speed
	e.w.mu.Unlock()
	if fn != nil {
		fn(up, speed)
	}
}
