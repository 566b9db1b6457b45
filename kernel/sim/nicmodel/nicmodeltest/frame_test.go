package nicmodeltest

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

func TestPacket(t *testing.T) {
	mac := [6]byte{2, 0, 0, 0, 0, 1}
	for _, v6 := range []bool{false, true} {
		for _, udp := range []bool{false, true} {
			p := Packet{Dst: mac, V6: v6, ID: 9, Seq: 5, Flags: header.TCPFlagAck, Payload: Payload(100, 1)}
			build, proto, l4Len := p.TCP, header.TCPProtocolNumber, header.TCPMinimumSize
			if udp {
				build, proto, l4Len = p.UDP, header.UDPProtocolNumber, header.UDPMinimumSize
			}
			f := build()
			ipLen := header.IPv4MinimumSize
			src, dst := IP4A, IP4B
			if v6 {
				ipLen, src, dst = header.IPv6MinimumSize, IP6A, IP6B
			}
			if want := header.EthernetMinimumSize + ipLen + l4Len + 100; len(f) != want {
				t.Fatalf("v6 %v udp %v: %d bytes, want %d", v6, udp, len(f), want)
			}
			ip := f[header.EthernetMinimumSize:]
			if !v6 && !header.IPv4(ip).IsChecksumValid() {
				t.Errorf("udp %v: IPv4 checksum invalid", udp)
			}
			l4 := ip[ipLen:]
			if s := checksum.Checksum(l4, header.PseudoHeaderChecksum(proto, src, dst, uint16(len(l4)))); s != 0xffff {
				t.Errorf("v6 %v udp %v: L4 checksum sums to %#x", v6, udp, s)
			}

			p.Offload, p.PseudoLen = true, 1234
			if f = p.TCP(); udp {
				f = p.UDP()
			}
			ip = f[header.EthernetMinimumSize:]
			if !v6 && header.IPv4(ip).Checksum() != 0 {
				t.Errorf("udp %v offload: IPv4 checksum %#x, want 0", udp, header.IPv4(ip).Checksum())
			}
			at := 16
			if udp {
				at = 6
			}
			if got, want := binary.BigEndian.Uint16(ip[ipLen+at:]), header.PseudoHeaderChecksum(proto, src, dst, 1234); got != want {
				t.Errorf("v6 %v udp %v offload: L4 field %#x, want the pseudo-header sum %#x", v6, udp, got, want)
			}
		}
	}
	short := Packet{Dst: mac, Pad: true}.UDP()
	if len(short) != 60 {
		t.Errorf("padded frame of %d bytes", len(short))
	}
}

func TestCheckL4(t *testing.T) {
	mac := [6]byte{2, 0, 0, 0, 0, 1}
	for _, v6 := range []bool{false, true} {
		f := Packet{Dst: mac, V6: v6, Payload: Payload(30, 2)}.TCP()
		if l4 := CheckL4(t, f, v6); len(l4) != header.TCPMinimumSize+30 {
			t.Errorf("v6 %v: segment of %d bytes", v6, len(l4))
		}
		u := Packet{Dst: mac, V6: v6, Payload: Payload(30, 2)}.UDP()
		CheckL4(t, u, v6)
	}
}

// fatalRecorder is a testing.TB whose Fatal ends the goroutine and notes
// that it was called.
type fatalRecorder struct {
	testing.TB
	failed bool
}

func (r *fatalRecorder) Helper()               {}
func (r *fatalRecorder) Fatal(...any)          { r.failed = true; runtime.Goexit() }
func (r *fatalRecorder) Fatalf(string, ...any) { r.failed = true; runtime.Goexit() }

func TestCheckL4Refuses(t *testing.T) {
	mac := [6]byte{2, 0, 0, 0, 0, 1}
	good := Packet{Dst: mac, Payload: Payload(30, 2)}.TCP()
	badIP := bytes.Clone(good)
	badIP[header.EthernetMinimumSize+8]++ // TTL
	badL4 := bytes.Clone(good)
	badL4[len(badL4)-1]++
	for name, c := range map[string]struct {
		f  []byte
		v6 bool
	}{"ip": {badIP, false}, "l4": {badL4, false}, "version": {good, true}, "runt": {good[:10], false}} {
		r := &fatalRecorder{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			CheckL4(r, c.f, c.v6)
		}()
		<-done
		if !r.failed {
			t.Errorf("%s: a bad frame passed", name)
		}
	}
}

// cut segments a TCP frame as the hardware should, for testing the check.
func cut(f []byte, hdr, mss int) [][]byte {
	var out [][]byte
	for off, i := hdr, 0; off < len(f); off, i = off+mss, i+1 {
		end := min(off+mss, len(f))
		s := append(append([]byte{}, f[:hdr]...), f[off:end]...)
		ip := header.IPv4(s[header.EthernetMinimumSize:])
		ip.SetTotalLength(uint16(len(s) - header.EthernetMinimumSize))
		ip.SetID(ip.ID() + uint16(i))
		ip.SetChecksum(0)
		ip.SetChecksum(^ip.CalculateChecksum())
		tcp := header.TCP(ip.Payload())
		tcp.SetSequenceNumber(tcp.SequenceNumber() + uint32(off-hdr))
		fl := tcp.Flags()
		if end < len(f) {
			fl &^= header.TCPFlagFin | header.TCPFlagPsh
		}
		if i > 0 {
			fl &^= header.TCPFlagCwr
		}
		tcp.SetFlags(uint8(fl))
		tcp.SetChecksum(0)
		src, dst := ip.SourceAddress(), ip.DestinationAddress()
		tcp.SetChecksum(^checksum.Checksum(tcp, header.PseudoHeaderChecksum(header.TCPProtocolNumber, src, dst, uint16(len(tcp)))))
		out = append(out, s)
	}
	return out
}

func TestCheckSegments(t *testing.T) {
	mac := [6]byte{2, 0, 0, 0, 0, 1}
	flags := header.TCPFlagAck | header.TCPFlagPsh | header.TCPFlagFin | header.TCPFlagCwr
	p := Packet{Dst: mac, ID: 40, Seq: 1000, Flags: flags, Payload: Payload(2500, 3)}
	c := TSOCase{MSS: 1000, Seq: 1000, ID: 40, Flags: flags, Payload: p.Payload}
	hdr := header.EthernetMinimumSize + header.IPv4MinimumSize + header.TCPMinimumSize
	CheckSegments(t, cut(p.TCP(), hdr, 1000), c)

	for name, spoil := range map[string]func(s [][]byte) [][]byte{
		"lost segment": func(s [][]byte) [][]byte { return s[:2] },
		"out of order": func(s [][]byte) [][]byte { s[0], s[1] = s[1], s[0]; return s },
		"CWR lost": func(s [][]byte) [][]byte {
			return cut(Packet{Dst: mac, ID: 40, Seq: 1000, Flags: flags &^ header.TCPFlagCwr, Payload: p.Payload}.TCP(), hdr, 1000)
		},
	} {
		r := &fatalRecorder{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			CheckSegments(r, spoil(cut(p.TCP(), hdr, 1000)), c)
		}()
		<-done
		if !r.failed {
			t.Errorf("%s: passed", name)
		}
	}
}
