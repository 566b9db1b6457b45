package qemu

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// Frames cross the socket behind their 32-bit big-endian lengths, both
// ways, as QEMU's stream netdev writes and reads them; a length past any
// frame ends the stream with an error.
func TestStreamEndFraming(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nic.sock")
	e, err := ListenStream(path)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 4)
	e.Receive(func(f []byte) { got <- append([]byte(nil), f...) })
	e.Send([]byte("dropped: nobody connected yet"))
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	frame := bytes.Repeat([]byte{0xab}, 60)
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(frame)))
	c.Write(append(hdr[:], frame...))
	select {
	case f := <-got:
		if !bytes.Equal(f, frame) {
			t.Fatalf("received %x", f)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no frame from the socket")
	}
	// The far end connected once the first frame came: Send reaches it.
	e.Send([]byte{1, 2, 3})
	back := make([]byte, 7)
	if _, err := io.ReadFull(c, back); err != nil || !bytes.Equal(back, []byte{0, 0, 0, 3, 1, 2, 3}) {
		t.Fatalf("sent %x, %v", back, err)
	}
	binary.BigEndian.PutUint32(hdr[:], maxFrame+1)
	c.Write(hdr[:])
	if n, err := c.Read(back); err != io.EOF {
		t.Fatalf("after an oversized length the stream gave %d bytes, %v; want it closed", n, err)
	}
	if err := e.Close(); err == nil {
		t.Errorf("an oversized length was taken")
	}
}

// QEMU going away ends the stream and is no error, however the end shows:
// EOF or a reset on a read, a broken pipe on a frame sent as it exited.
// Anything else is the stream's error, and the first one stays.
func TestStreamEndFailures(t *testing.T) {
	wrap := func(errno syscall.Errno) error {
		return &net.OpError{Op: "write", Net: "unix", Err: os.NewSyscallError("write", errno)}
	}
	for _, err := range []error{io.EOF, net.ErrClosed, wrap(syscall.ECONNRESET), wrap(syscall.EPIPE)} {
		var e StreamEnd
		e.failLocked(err)
		if e.err != nil {
			t.Errorf("%v kept as the stream's error", err)
		}
	}
	var e StreamEnd
	bad := errors.New("frame of 70000 bytes")
	e.failLocked(bad)
	e.failLocked(wrap(syscall.EIO))
	if e.err != bad {
		t.Errorf("error %v, want the first: %v", e.err, bad)
	}
}
