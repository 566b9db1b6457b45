// Package ntptest is an NTP server for tests on a gVisor stack, written
// from RFC 5905's packet layout: it answers each client request with
// its own clock moved by Skew.
package ntptest

import (
	"encoding/binary"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// Server answers NTP client requests on UDP port 123.
type Server struct {
	// Skew is added to the host's clock in every answer.
	Skew    time.Duration
	conn    *gonet.UDPConn
	answers atomic.Int64
	done    chan struct{}
}

// Start serves on NIC id of s.
func Start(s *stack.Stack, id tcpip.NICID, skew time.Duration) (*Server, error) {
	c, err := gonet.DialUDP(s, &tcpip.FullAddress{NIC: id, Port: 123}, nil, ipv4.ProtocolNumber)
	if err != nil {
		return nil, fmt.Errorf("ntptest: listen :123: %w", err)
	}
	srv := &Server{Skew: skew, conn: c, done: make(chan struct{})}
	go srv.serve()
	return srv, nil
}

// Answers is how many requests were answered.
func (s *Server) Answers() int64 { return s.answers.Load() }

// Close stops the server.
func (s *Server) Close() {
	s.conn.Close()
	<-s.done
}

// ntpEpoch is 1900-01-01 in Unix seconds.
const ntpEpoch = 2208988800

func stamp(t time.Time) uint64 {
	sec := uint64(t.Unix() + ntpEpoch)
	frac := uint64(t.Nanosecond()) << 32 / 1e9
	return sec<<32 | frac
}

func (s *Server) serve() {
	defer close(s.done)
	buf := make([]byte, 512)
	for {
		n, peer, err := s.conn.ReadFrom(buf)
		if err != nil {
			return
		}
		if n < 48 || buf[0]&7 != 3 { // mode 3: client
			continue
		}
		recv := time.Now().Add(s.Skew)
		r := make([]byte, 48)
		r[0] = 0<<6 | 4<<3 | 4                       // leap none, version 4, mode 4: server
		r[1] = 2                                     // stratum
		r[2] = buf[2]                                // poll
		r[3] = 0xec                                  // precision about 2^-20 s
		binary.BigEndian.PutUint32(r[4:], 1<<16/100) // root delay 10 ms
		binary.BigEndian.PutUint32(r[8:], 1<<16/100) // root dispersion 10 ms
		copy(r[12:16], []byte{192, 0, 2, 123})       // reference id
		binary.BigEndian.PutUint64(r[16:], stamp(recv.Add(-time.Minute)))
		copy(r[24:32], buf[40:48]) // origin: the client's transmit time
		binary.BigEndian.PutUint64(r[32:], stamp(recv))
		binary.BigEndian.PutUint64(r[40:], stamp(time.Now().Add(s.Skew)))
		if _, err := s.conn.WriteTo(r, peer.(*net.UDPAddr)); err == nil {
			s.answers.Add(1)
		}
	}
}
