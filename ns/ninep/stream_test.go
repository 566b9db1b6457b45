package ninep

import (
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/hugelgupf/p9/linux"

	"github.com/ether9/ether9/ns"
	"github.com/ether9/ether9/ns/admin"
)

// pipeStream is a stream whose one reader reads what the test writes;
// closed says the server closed that reader.
type pipeStream struct {
	w      chan *io.PipeWriter
	closed chan struct{}
}

type pipeReader struct {
	*io.PipeReader
	closed chan struct{}
}

func (r pipeReader) Close() error {
	close(r.closed)
	return r.PipeReader.Close()
}

func (s *pipeStream) open(ns.Conn) (io.ReadCloser, error) {
	r, w := io.Pipe()
	s.w <- w
	return pipeReader{r, s.closed}, nil
}

// TestStreamNeedsToken: a stream (a capture shows traffic) opens only for
// a client attached with the token; its reads follow the writes; a
// connection that ends while a read waits on a quiet stream closes the
// reader and the server's connection ends. Reading is no write: the same
// holds on a read-only server.
func TestStreamNeedsToken(t *testing.T) {
	for _, writable := range []bool{true, false} {
		t.Run(fmt.Sprintf("writable=%v", writable), func(t *testing.T) { streamNeedsToken(t, writable) })
	}
}

func streamNeedsToken(t *testing.T, writable bool) {
	n := ns.New()
	st := &pipeStream{w: make(chan *io.PipeWriter, 1), closed: make(chan struct{})}
	if err := n.Add("/net/ether0/capture", ns.StreamFunc(st.open)); err != nil {
		t.Fatal(err)
	}
	secret, _ := admin.ParseToken(token)
	g := admin.NewGuard(secret, t.Logf)
	srv := New(n, writable, g)
	dial := func(tok string) (*Client, chan error) {
		cs, cc := net.Pipe()
		done := make(chan error, 1)
		go func() { done <- srv.ServeConn(cs) }()
		c, err := DialToken(cc, tok)
		if err != nil {
			t.Fatal(err)
		}
		return c, done
	}

	anon, anonDone := dial("")
	if _, err := anon.Stream("/net/ether0/capture"); !errors.Is(err, linux.EACCES) {
		t.Fatalf("open without the token: %v, want EACCES", err)
	}
	if g.Refused(admin.NoToken) != 1 || len(st.w) != 0 {
		t.Fatalf("refusal not counted, or the stream opened:\n%s", g.Stats())
	}
	anon.Close()
	<-anonDone

	c, done := dial(token)
	r, err := c.Stream("/net/ether0/capture")
	if err != nil {
		t.Fatal(err)
	}
	w := <-st.w
	go w.Write([]byte("frames"))
	got := make([]byte, 6)
	if _, err := io.ReadFull(r, got); err != nil || string(got) != "frames" {
		t.Fatalf("read %q, %v", got, err)
	}
	// A read waits on the quiet stream; the client goes.
	reading := make(chan error, 1)
	go func() { _, err := r.Read(make([]byte, 10)); reading <- err }()
	time.Sleep(20 * time.Millisecond)
	c.Close()
	for what, ch := range map[string]<-chan struct{}{"the reader closed": st.closed} {
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("the connection ended, but not %s", what)
		}
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the server's connection did not end while a stream read waited")
	}
}
