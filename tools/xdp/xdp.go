// Package xdp runs the zero-copy queue sample programs (rxdrop, txpush,
// l2fwd) in the shape of the AF_XDP benchmark: on the simulated machine an
// 82576 driven by igb (or an I225 driven by igc) behind VT-d, joined by a
// wire to a traffic generator; the application receives and sends through the
// netstack path (a gVisor UDP socket), a copy-mode queue or a zero-copy
// queue. The tools under tools/ and `bench xdp` share it.
package xdp

import (
	"encoding/binary"
	"fmt"
	"strings"
	"time"

	"github.com/ether9/ether9/internal/udpframe"
)

// Test is a sample program.
type Test uint8

const (
	RxDrop Test = iota // receive and drop
	TxPush             // send as fast as the queue takes frames
	L2Fwd              // receive, swap the MAC addresses, send back
)

var testNames = []string{"rxdrop", "txpush", "l2fwd"}

func (t Test) String() string {
	if int(t) < len(testNames) {
		return testNames[t]
	}
	return fmt.Sprintf("test(%d)", uint8(t))
}

// ParseTest reads rxdrop, txpush or l2fwd.
func ParseTest(s string) (Test, error) {
	for i, n := range testNames {
		if n == s {
			return Test(i), nil
		}
	}
	return 0, fmt.Errorf("xdp: test %q: want one of %s", s, strings.Join(testNames, ", "))
}

// Path is how the application's frames move.
type Path uint8

const (
	Netstack Path = iota // through gVisor: a UDP socket
	Copy                 // a queue taken over in copy mode
	ZeroCopy             // a queue taken over in zero-copy mode
)

var pathNames = []string{"netstack", "copy", "zero-copy"}

func (p Path) String() string {
	if int(p) < len(pathNames) {
		return pathNames[p]
	}
	return fmt.Sprintf("path(%d)", uint8(p))
}

// ParsePath reads netstack, copy or zero-copy.
func ParsePath(s string) (Path, error) {
	for i, n := range pathNames {
		if n == s {
			return Path(i), nil
		}
	}
	return 0, fmt.Errorf("xdp: path %q: want one of %s", s, strings.Join(pathNames, ", "))
}

// Addresses of the two ends of the wire.
var (
	hostMAC = [6]byte{0x52, 0x54, 0x00, 0x12, 0x34, 0x56} // the NIC under test
	peerMAC = [6]byte{0x02, 0x00, 0x00, 0x00, 0x00, 0x02} // the generator
	hostIP  = [4]byte{10, 0, 0, 1}
	peerIP  = [4]byte{10, 0, 0, 2}
)

const (
	udpPort   = 9 // discard
	minFrame  = 60
	maxFrame  = 1514
	srcPortHi = 40000
)

// udpFrame builds a size-byte frame from src to dst with seq at the
// start of the payload and no UDP checksum, so that a generator may
// rewrite seq alone.
func udpFrame(b []byte, size int, srcMAC, dstMAC [6]byte, src, dst [4]byte, seq uint32) []byte {
	flow := udpframe.Flow{SrcMAC: srcMAC, DstMAC: dstMAC, Src: src, Dst: dst, SrcPort: srcPortHi, DstPort: udpPort}
	f := flow.Put(b, size)
	binary.BigEndian.PutUint32(f[udpframe.HeaderLen:], seq)
	return f
}

// Result is one measured run.
type Result struct {
	Test    Test
	Path    Path
	Size    int
	Frames  uint64
	Elapsed time.Duration
}

// Kpps is thousands of frames per second.
func (r Result) Kpps() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Frames) / r.Elapsed.Seconds() / 1e3
}

func (r Result) String() string {
	return fmt.Sprintf("%s %s %d B: %d frames in %v, %.1f Kpps", r.Test, r.Path, r.Size, r.Frames, r.Elapsed.Round(time.Millisecond), r.Kpps())
}
