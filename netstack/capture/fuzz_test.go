package capture

import (
	"encoding/binary"
	"testing"
)

// FuzzTCPConn: any frame from the wire parses without a panic, and ports
// are reported only from a TCP header the frame holds.
func FuzzTCPConn(f *testing.F) {
	v4 := make([]byte, 54)
	binary.BigEndian.PutUint16(v4[12:], 0x0800)
	v4[14], v4[23] = 0x45, 6
	f.Add(v4)
	v6 := make([]byte, 78)
	binary.BigEndian.PutUint16(v6[12:], 0x86dd)
	v6[14], v6[20] = 0x60, 6
	f.Add(v6)
	f.Add([]byte{})
	f.Add(v4[:37])
	f.Fuzz(func(t *testing.T, frame []byte) {
		src, dst, ok := tcpConn(frame)
		if !ok {
			return
		}
		if len(frame) < 14+20+4 || !src.IsValid() || !dst.IsValid() {
			t.Fatalf("ports from a %d-byte frame: %v %v", len(frame), src, dst)
		}
	})
}
