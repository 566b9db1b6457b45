package ns

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHTTP(t *testing.T) {
	n := New()
	c := &counterCtl{}
	c.v.Store(42)
	if err := n.Add("/dev/c/ctl", c); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(n.Handler("/ns"))
	defer srv.Close()
	for _, tc := range []struct {
		method, path string
		code         int
		body         string
	}{
		{"GET", "/ns/", 200, "dev/\n"},
		{"GET", "/ns/dev/c", 200, "ctl\n"},
		{"GET", "/ns/dev/c/ctl", 200, "value: 42\n"},
		{"GET", "/ns/dev/nothing", 404, "does not exist"},
		{"POST", "/ns/dev/c/ctl", 405, "read-only"},
	} {
		req, _ := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader("set 1"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code || !strings.Contains(string(b), tc.body) {
			t.Errorf("%s %s: %d %q, want %d %q", tc.method, tc.path, resp.StatusCode, b, tc.code, tc.body)
		}
	}
	if c.v.Load() != 42 {
		t.Errorf("POST changed the value")
	}
}
