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

	"gvisor.dev/gvisor/pkg/tcpip/checksum"
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
	hdrLen    = 14 + 20 + 8
	srcPortHi = 40000
)

// udpFrame builds a size-byte Ethernet/IPv4/UDP frame from src to dst
// with valid checksums and seq in the payload.
func udpFrame(b []byte, size int, srcMAC, dstMAC [6]byte, src, dst [4]byte, seq uint32) []byte {
	f := b[:size]
	clear(f)
	copy(f, dstMAC[:])
	copy(f[6:], srcMAC[:])
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	ip := f[14:34]
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], uint16(size-14))
	ip[8], ip[9] = 64, 17
	copy(ip[12:], src[:])
	copy(ip[16:], dst[:])
	binary.BigEndian.PutUint16(ip[10:], ^checksum.Checksum(ip, 0))
	udp := f[34:]
	binary.BigEndian.PutUint16(udp[0:], srcPortHi)
	binary.BigEndian.PutUint16(udp[2:], udpPort)
	binary.BigEndian.PutUint16(udp[4:], uint16(size-34))
	binary.BigEndian.PutUint32(udp[8:], seq)
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
