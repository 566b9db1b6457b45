package nicmodel

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// TCP flag masks applied to the segments TSO cuts: which of the original
// header's flags (low 12 bits) each segment keeps. A packet cut into one
// segment is first and last at once and keeps what either mask keeps.
type FlagMasks struct{ First, Middle, Last uint16 }

// DefaultFlagMasks clear FIN and PSH on all but the last segment and CWR
// on all but the first: the power-on values of DTXTCPFLGL/H.
var DefaultFlagMasks = FlagMasks{First: 0x0ff6, Middle: 0x0f76, Last: 0x0f7f}

// TSO describes one segmentation job: where the headers are and what to
// fix up in each segment.
type TSO struct {
	L3, L4  int  // offsets of the IP and TCP/UDP headers
	HdrLen  int  // bytes of headers repeated in front of every segment
	MSS     int  // payload bytes per segment
	IPv4    bool // else IPv6
	TCP     bool // else UDP
	IPCSO   int  // where the IPv4 header checksum goes
	IPCSEnd int  // end (exclusive) of the bytes it covers
	TUCSO   int  // where the TCP/UDP checksum goes
	IPCsum  bool // insert the IPv4 header checksum in each segment
	L4Csum  bool // insert the TCP/UDP checksum in each segment
	Flags   FlagMasks
}

// ErrBadTSO is returned for a segmentation set-up whose offsets do not fit
// the headers.
var ErrBadTSO = errors.New("nicmodel: bad TSO set-up")

func (t *TSO) check(p []byte) error {
	l4fix := 6 // through the UDP length
	if t.TCP {
		l4fix = 14 // through the flags byte
	}
	switch {
	case t.MSS <= 0, t.HdrLen <= 0, len(p) <= t.HdrLen:
		return fmt.Errorf("%w: mss %d, headers %d of a %d-byte packet", ErrBadTSO, t.MSS, t.HdrLen, len(p))
	case t.L3 < 0, t.L3+20 > t.HdrLen, t.L4 < 0, t.L4+l4fix > t.HdrLen:
		return fmt.Errorf("%w: IP at %d, L4 at %d, headers %d", ErrBadTSO, t.L3, t.L4, t.HdrLen)
	case t.TUCSO < 0, t.TUCSO+2 > t.HdrLen, t.IPCSO < 0, t.IPCSO+2 > t.HdrLen, t.IPCSEnd > t.HdrLen:
		return fmt.Errorf("%w: checksums at %d and %d, headers %d", ErrBadTSO, t.IPCSO, t.TUCSO, t.HdrLen)
	}
	return nil
}

// Segment cuts packet p into frames: the headers repeated in front of each
// MSS-sized piece of the payload, with the IP length, the IPv4
// identification, the TCP sequence number and flags (or the UDP length),
// and the checksums fixed up per segment. Software leaves the partial
// pseudo-header sum, without the length, in the L4 checksum field. Each
// frame is built in buf (grown as needed, returned for reuse) and handed
// to emit, which must not keep it.
func (t *TSO) Segment(p, buf []byte, emit func([]byte)) ([]byte, error) {
	if err := t.check(p); err != nil {
		return buf, err
	}
	be := binary.BigEndian
	hdr, mss := t.HdrLen, t.MSS
	id := be.Uint16(p[t.L3+4:])
	seq := be.Uint32(p[t.L4+4:])
	flags := be.Uint16(p[t.L4+12:]) & 0x0fff
	payload := p[hdr:]
	for i, off := 0, 0; off < len(payload); i, off = i+1, off+mss {
		chunk := payload[off:min(off+mss, len(payload))]
		last := off+mss >= len(payload)
		f := append(append(buf[:0], p[:hdr]...), chunk...)
		buf = f
		if t.IPv4 {
			be.PutUint16(f[t.L3+2:], uint16(len(f)-t.L3))
			be.PutUint16(f[t.L3+4:], id+uint16(i))
		} else {
			be.PutUint16(f[t.L3+4:], uint16(len(f)-t.L3-40))
		}
		if t.TCP {
			be.PutUint32(f[t.L4+4:], seq+uint32(off))
			var mask uint16
			switch {
			case i == 0 && last:
				mask = t.Flags.First | t.Flags.Last
			case i == 0:
				mask = t.Flags.First
			case last:
				mask = t.Flags.Last
			default:
				mask = t.Flags.Middle
			}
			be.PutUint16(f[t.L4+12:], be.Uint16(f[t.L4+12:])&0xf000|flags&mask&0x0fff)
		} else {
			be.PutUint16(f[t.L4+4:], uint16(len(f)-t.L4))
		}
		if t.IPCsum && t.IPv4 {
			InsertIPChecksum(f, t.L3, t.IPCSO, t.IPCSEnd)
		}
		if t.L4Csum {
			InsertL4Checksum(f, t.L4, t.TUCSO, len(f), uint16(len(f)-t.L4), !t.TCP)
		}
		emit(f)
	}
	return buf, nil
}
