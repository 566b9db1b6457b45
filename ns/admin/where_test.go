package admin

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
)

func TestParseWhere(t *testing.T) {
	w, err := ParseWhere("ether1,192.168.1.0/24,10.0.0.7,fd00::/8")
	if err != nil {
		t.Fatal(err)
	}
	if got := w.String(); got != "ether1,192.168.1.0/24,10.0.0.7/32,fd00::/8" {
		t.Fatalf("parsed as %q", got)
	}
	for _, c := range []struct {
		nic, remote string
		ok          bool
	}{
		{"ether1", "203.0.113.9", true},
		{"ether0", "192.168.1.200", true},
		{"ether0", "192.168.2.1", false},
		{"ether0", "10.0.0.7", true},
		{"ether0", "10.0.0.8", false},
		{"", "::ffff:192.168.1.5", true},
		{"ether0", "fd12::1", true},
		{"", "2001:db8::1", false},
	} {
		if got := w.Admits(c.nic, netip.MustParseAddr(c.remote)); got != c.ok {
			t.Errorf("Admits(%q, %s) = %v, want %v", c.nic, c.remote, got, c.ok)
		}
	}
	for _, bad := range []string{"", ",", "ether", "etherX", "ether0,", "10.0.0.0/33", "eth0", "10.0.0", "ether1234"} {
		if _, err := ParseWhere(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestProtectWhere: a request from where ether9.admin= does not admit is
// refused before the token is looked at, even with the right one.
func TestProtectWhere(t *testing.T) {
	g, _ := guard(t)
	w, err := ParseWhere("ether1,192.168.1.0/24")
	if err != nil {
		t.Fatal(err)
	}
	g.Restrict(w, func(a netip.Addr) string {
		if a == netip.MustParseAddr("10.1.0.1") {
			return "ether1"
		}
		return "ether0"
	})
	ran := 0
	h := g.Protect(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran++ }))
	for _, c := range []struct {
		local, remote string
		code          int
	}{
		{"10.0.0.1:80", "203.0.113.9:4000", 403},
		{"10.1.0.1:80", "203.0.113.9:4000", 200},
		{"10.0.0.1:80", "192.168.1.9:4000", 200},
	} {
		req := httptest.NewRequest("POST", "/ctl", nil)
		req.RemoteAddr = c.remote
		req.Header.Set("Authorization", "Bearer "+secret)
		local, _ := net.ResolveTCPAddr("tcp", c.local)
		req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, local))
		rec := httptest.NewRecorder()
		before, refused := ran, g.Refused(NotAdmin)
		h.ServeHTTP(rec, req)
		if rec.Code != c.code || (ran == before+1) != (c.code == 200) || (g.Refused(NotAdmin) == refused+1) != (c.code == 403) {
			t.Errorf("%s -> %s: %d (handler ran %v), want %d\n%s", c.remote, c.local, rec.Code, ran > before, c.code, g.Stats())
		}
	}
}

func FuzzParseWhere(f *testing.F) {
	for _, s := range []string{"ether0", "10.0.0.0/8,ether1", "fd00::/8", "1.2.3.4", ",", "ether"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		w, err := ParseWhere(s)
		if err != nil {
			return
		}
		if w.Any() {
			t.Fatalf("ParseWhere(%q) admits everything", s)
		}
		again, err := ParseWhere(w.String())
		if err != nil || again.String() != w.String() {
			t.Fatalf("ParseWhere(%q) = %q, which parses as %q, %v", s, w, again, err)
		}
	})
}
