package ns

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// testStream hands each opener a pipe the test writes to, and says when
// the reader was closed.
type testStream struct {
	mu     sync.Mutex
	w      []*io.PipeWriter
	closed chan struct{}
}

type closeNotify struct {
	*io.PipeReader
	closed chan struct{}
	once   sync.Once
}

func (c *closeNotify) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.PipeReader.Close()
}

func (s *testStream) open(Conn) (io.ReadCloser, error) {
	r, w := io.Pipe()
	s.mu.Lock()
	s.w = append(s.w, w)
	s.mu.Unlock()
	return &closeNotify{PipeReader: r, closed: s.closed}, nil
}

func (s *testStream) writer(t *testing.T) *io.PipeWriter {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		s.mu.Lock()
		if len(s.w) > 0 {
			w := s.w[len(s.w)-1]
			s.mu.Unlock()
			return w
		}
		s.mu.Unlock()
		time.Sleep(time.Millisecond)
	}
	t.Fatal("the stream was never opened")
	return nil
}

func TestStream(t *testing.T) {
	n := New()
	st := &testStream{closed: make(chan struct{})}
	if err := n.Add("/net/ether0/capture", StreamFunc(st.open)); err != nil {
		t.Fatal(err)
	}
	e, err := n.Stat("/net/ether0/capture")
	if err != nil || !e.Stream || e.Writable {
		t.Fatalf("stat %+v, %v: want a stream", e, err)
	}
	if _, err := n.ReadFile("/net/ether0/capture"); !errors.Is(err, ErrStream) {
		t.Fatalf("read as a file: %v, want ErrStream", err)
	}
	if _, err := n.ReadOnly().Open("/net/ether0/capture", Conn{}); !errors.Is(err, ErrPermission) {
		t.Fatalf("open in the read-only view: %v, want ErrPermission", err)
	}
	if _, err := n.Open("/net/nothing", Conn{}); !errors.Is(err, ErrNotExist) {
		t.Fatalf("open of nothing: %v", err)
	}

	ro := httptest.NewServer(n.ReadOnly().Handler("/ns"))
	defer ro.Close()
	resp, err := http.Get(ro.URL + "/ns/net/ether0/capture")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(b), "token") {
		t.Fatalf("read-only view: %d %q, want 403 naming the token", resp.StatusCode, b)
	}

	full := httptest.NewServer(n.Handler("/ns"))
	defer full.Close()
	resp, err = http.Get(full.URL + "/ns/net/ether0/capture")
	if err != nil {
		t.Fatal(err)
	}
	w := st.writer(t)
	// Each write reaches the client as it is made, not at the end.
	got := make([]byte, 5)
	w.Write([]byte("first"))
	done := make(chan error, 1)
	go func() { _, err := io.ReadFull(resp.Body, got); done <- err }()
	select {
	case err := <-done:
		if err != nil || string(got) != "first" {
			t.Fatalf("read %q, %v", got, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a write to the stream did not reach the client")
	}
	// The client going away closes the reader, though the stream is quiet.
	resp.Body.Close()
	select {
	case <-st.closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the reader was not closed when the client went")
	}
}
