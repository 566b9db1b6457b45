package ninep

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"

	"github.com/ether9/ether9/netstack/capture"
	"github.com/ether9/ether9/ns"
	"github.com/ether9/ether9/ns/admin"
)

// recorder is a client's end of a pipe that keeps what the client sent.
type recorder struct {
	net.Conn
	sent *bytes.Buffer
}

func (r recorder) Write(p []byte) (int, error) {
	r.sent.Write(p)
	return r.Conn.Write(p)
}

// fuzzTree is a namespace with a ctl, a file and a running capture.
func fuzzTree(t testing.TB) (*ns.Namespace, *modeCtl) {
	n := ns.New()
	ctl := &modeCtl{}
	ctl.mode.Store("strict")
	c := capture.New()
	c.Start()
	for p, f := range map[string]ns.File{
		"/dev/iommu/ctl":      ctl,
		"/net/ether0/addr":    ns.Text(func() string { return "52:54:00:12:34:56\n" }),
		"/net/ether0/capture": ns.StreamFunc(func(via ns.Conn) (io.ReadCloser, error) { return c.Open(via.Local, via.Remote) }),
	} {
		if err := n.Add(p, f); err != nil {
			t.Fatal(err)
		}
	}
	return n, ctl
}

// session records the bytes a real client sends for ops, attached with
// tok: a seed of well-formed messages for the fuzzer to bend.
func session(f *testing.F, tok string, ops func(c *Client)) []byte {
	n, _ := fuzzTree(f)
	secret, _ := admin.ParseToken(token)
	srv := New(n, true, admin.NewGuard(secret, func(string, ...any) {}))
	cs, cc := net.Pipe()
	done := make(chan error, 1)
	go func() { done <- srv.ServeConn(cs) }()
	var sent bytes.Buffer
	c, err := DialToken(recorder{cc, &sent}, tok)
	if err != nil {
		cc.Close() // a refused attach: its bytes are the seed
	} else {
		ops(c)
		c.Close()
	}
	<-done
	return sent.Bytes()
}

// FuzzServer feeds the 9P server raw bytes, as a client on the network
// would: it never panics, the connection ends when the bytes do (no
// request left waiting, a capture stream included), and without the
// token in them (or with writes off) no ctl changes.
func FuzzServer(f *testing.F) {
	seeds := [][]byte{
		session(f, "", func(c *Client) { c.Read("/dev/iommu/ctl"); c.Write("/dev/iommu/ctl", "deferred 8") }),
		session(f, token, func(c *Client) { c.Write("/dev/iommu/ctl", "deferred 8"); c.List("/net/ether0") }),
		session(f, token, func(c *Client) {
			if r, err := c.Stream("/net/ether0/capture"); err == nil {
				io.ReadFull(r, make([]byte, 24))
				r.Close()
			}
		}),
		session(f, "wrong-token-wrong-token", func(c *Client) {}),
		{}, {0, 0, 0, 0}, {0xff, 0xff, 0xff, 0xff, 100},
	}
	for _, s := range seeds {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, msgs []byte, writable bool) {
		n, ctl := fuzzTree(t)
		secret, _ := admin.ParseToken(token)
		srv := New(n, writable, admin.NewGuard(secret, func(string, ...any) {}))
		cs, cc := net.Pipe()
		done := make(chan error, 1)
		go func() { done <- srv.ServeConn(cs) }()
		go io.Copy(io.Discard, cc)
		cc.SetWriteDeadline(time.Now().Add(10 * time.Second))
		cc.Write(msgs)
		cc.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("the connection did not end with its %d bytes", len(msgs))
		}
		if got := ctl.mode.Load(); got != "strict" && (!writable || !bytes.Contains(msgs, []byte(token))) {
			t.Fatalf("ctl became %q without the token (writable %v)", got, writable)
		}
	})
}
