package simmachine

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzControlRequest sends POST /ctl with any body to a simulated
// machine's HTTP face, with or without the token, from the same site or
// another: without the token, or cross-site, it is refused (401, 403)
// and the state is as it was; with it, it answers "ok N" or names the
// line it refused, and every refusal is counted.
func FuzzControlRequest(f *testing.F) {
	for _, s := range []string{"iommu deferred 16", "ether0 tso off\nether0 copybreak 0", "machine poweroff", "bad line",
		"iommu strict\nnonsense\niommu deferred 4", "", "\n\n", "ether0 capture on\nether0 capture snaplen 64"} {
		f.Add(s, true, false)
		f.Add(s, false, false)
		f.Add(s, true, true)
	}
	h := startQuiet(f)
	defer h.Close()
	handler := h.System.Handler()
	state := func(t *testing.T) string { return controlState(t, h) }
	refused := func(t *testing.T) string {
		s, err := h.System.Namespace().ReadFile("/dev/admin/refused")
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	f.Fuzz(func(t *testing.T, body string, token, crossSite bool) {
		before, counted := state(t), refused(t)
		req := httptest.NewRequest("POST", "/ctl", strings.NewReader(body))
		if token {
			req.Header.Set("Authorization", "Bearer "+testToken)
		}
		if crossSite {
			req.Header.Set("Sec-Fetch-Site", "cross-site")
		}
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		if !token || crossSite {
			want := http.StatusUnauthorized
			if crossSite {
				want = http.StatusForbidden
			}
			if rec.Code != want {
				t.Fatalf("token %v cross-site %v: %d %q, want %d", token, crossSite, rec.Code, rec.Body, want)
			}
			if after := state(t); after != before {
				t.Fatalf("a refused request (%q) changed the state:\n%s\nwas:\n%s", body, after, before)
			}
			if refused(t) == counted {
				t.Fatalf("a refusal not counted:\n%s", counted)
			}
			return
		}
		switch rec.Code {
		case http.StatusOK:
			if !strings.HasPrefix(rec.Body.String(), "ok ") {
				t.Fatalf("%q: 200 %q", body, rec.Body)
			}
		case http.StatusBadRequest:
			if !strings.Contains(rec.Body.String(), "applied before it") {
				t.Fatalf("%q: 400 %q does not say what was applied", body, rec.Body)
			}
		case http.StatusRequestEntityTooLarge:
			if len(body) <= 64<<10 {
				t.Fatalf("a %d-byte body refused as too large", len(body))
			}
		default:
			t.Fatalf("%q with the token: %d %q", body, rec.Code, rec.Body)
		}
	})
}
