package qemu

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"

	"github.com/ether9/ether9/kernel/sim/wire"
)

// StreamEnd is the far end of a NIC on a stream netdev (Config.Stream): a
// Unix socket QEMU connects to, carrying each Ethernet frame behind its
// length as a 32-bit big-endian number, as QEMU's stream and socket
// netdevs frame them. It is a wire.Port, so a simulated peer (a gVisor
// stack) can sit on the cable in place of QEMU's user network.
type StreamEnd struct {
	ln net.Listener

	mu   sync.Mutex
	conn net.Conn
	recv func([]byte)
	err  error
	done chan struct{}
}

var _ wire.Port = (*StreamEnd)(nil)

// maxFrame bounds what a frame's length may say: a jumbo frame and more.
const maxFrame = 64 << 10

// ListenStream listens on the Unix socket path and takes QEMU's
// connection when it comes.
func ListenStream(path string) (*StreamEnd, error) {
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("qemu: stream netdev: %w", err)
	}
	e := &StreamEnd{ln: ln, done: make(chan struct{})}
	go e.serve()
	return e, nil
}

func (e *StreamEnd) serve() {
	defer close(e.done)
	conn, err := e.ln.Accept()
	if err != nil {
		e.fail(err)
		return
	}
	defer conn.Close()
	e.mu.Lock()
	e.conn = conn
	e.mu.Unlock()
	var hdr [4]byte
	buf := make([]byte, maxFrame)
	for {
		if _, err := io.ReadFull(conn, hdr[:]); err != nil {
			e.fail(err)
			return
		}
		n := binary.BigEndian.Uint32(hdr[:])
		if n > maxFrame {
			e.fail(fmt.Errorf("qemu: stream netdev: frame of %d bytes", n))
			return
		}
		if _, err := io.ReadFull(conn, buf[:n]); err != nil {
			e.fail(err)
			return
		}
		e.mu.Lock()
		fn := e.recv
		e.mu.Unlock()
		if fn != nil {
			fn(buf[:n])
		}
	}
}

func (e *StreamEnd) fail(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.failLocked(err)
}

// failLocked keeps err as the stream's first error unless it is how a
// stream ends: closed by us, or QEMU stopping (EOF, a reset when it is
// killed, a broken pipe for a frame sent as it went).
func (e *StreamEnd) failLocked(err error) {
	switch {
	case e.err != nil, errors.Is(err, net.ErrClosed), errors.Is(err, io.EOF),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return
	}
	e.err = err
}

// Send implements wire.Port: the frame goes to QEMU, or is dropped
// while QEMU has not connected.
func (e *StreamEnd) Send(frame []byte) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.conn == nil {
		return
	}
	b := make([]byte, 4+len(frame))
	binary.BigEndian.PutUint32(b, uint32(len(frame)))
	copy(b[4:], frame)
	if _, err := e.conn.Write(b); err != nil {
		e.failLocked(err)
	}
}

// Receive implements wire.Port.
func (e *StreamEnd) Receive(fn func(frame []byte)) {
	e.mu.Lock()
	e.recv = fn
	e.mu.Unlock()
}

// Close ends the connection and returns the first error the stream saw.
func (e *StreamEnd) Close() error {
	e.ln.Close()
	e.mu.Lock()
	if e.conn != nil {
		e.conn.Close()
	}
	e.mu.Unlock()
	<-e.done
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}
