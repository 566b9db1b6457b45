package ether9

import (
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
)

// A program's environment parses the built-in roots only when TLS is
// first asked for (a QEMU boot spent 135 ms on them before serving
// HTTP), and only once however often it is asked.
func TestRootsOnFirstUse(t *testing.T) {
	var calls atomic.Int32
	pool := x509.NewCertPool()
	e := newEnv(nil, "t", func() (*x509.CertPool, error) {
		calls.Add(1)
		return pool, nil
	})
	m := e.machine()
	if n := calls.Load(); n != 0 {
		t.Fatalf("the roots were built %d times before any TLS use", n)
	}
	c1, c2 := m.HTTPClient(), m.HTTPClient()
	if c1.Transport != c2.Transport {
		t.Errorf("two HTTP clients do not share one transport (and its connections)")
	}
	if got := m.TLSConfig().RootCAs; got != pool {
		t.Errorf("TLSConfig's roots are not the environment's pool")
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the roots were built %d times, want once", n)
	}
}

// The default /init links none of the packages whose inits cost the
// half-second boot its time under QEMU's TCG: the protobuf metric model
// and the ABNF package (testing, go/parser) that prometheus/common's
// encoder brought (20 ms), client_golang's registry (25 ms).
func TestInitLinksLight(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/ether9/ether9/boot/init").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	heavy := []string{"testing", "go/parser", "google.golang.org/protobuf/proto", "github.com/prometheus/"}
	for _, p := range strings.Fields(string(out)) {
		for _, h := range heavy {
			if p == h || strings.HasSuffix(h, "/") && strings.HasPrefix(p, h) {
				t.Errorf("/init links %s", p)
			}
		}
	}
}

// A program on ether9 that serves http.DefaultServeMux serves only what
// it registered: nothing ether9 links registers there at init, as
// net/http/pprof and expvar do (every profile, the command line),
// unguarded by the token.
func TestNoDefaultMuxHandlers(t *testing.T) {
	for _, path := range []string{"/", "/debug/pprof/", "/debug/pprof/profile", "/debug/vars"} {
		if _, pattern := http.DefaultServeMux.Handler(httptest.NewRequest("GET", path, nil)); pattern != "" {
			t.Errorf("http.DefaultServeMux answers %s (pattern %q) before the program registered anything", path, pattern)
		}
	}
}
