package admin

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

const secret = "0123456789abcdef0123"

func guard(t *testing.T) (*Guard, *[]string) {
	tok, err := ParseToken(secret)
	if err != nil {
		t.Fatal(err)
	}
	var logs []string
	g := NewGuard(tok, func(f string, a ...any) { logs = append(logs, f) })
	return g, &logs
}

func TestProtect(t *testing.T) {
	g, _ := guard(t)
	changed := 0
	h := g.Protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { changed++ }))
	for _, c := range []struct {
		auth   string
		code   int
		reason string
	}{
		{"", 401, NoToken},
		{"Bearer wrong-token-wrong-token", 401, BadToken},
		{"Basic " + secret, 401, BadToken},
		{"Bearer " + secret + "x", 401, BadToken},
		{"Bearer " + secret, 200, ""},
		{"bearer " + secret, 200, ""},
	} {
		before := changed
		req := httptest.NewRequest("POST", "/ctl", strings.NewReader("machine poweroff"))
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		rec := httptest.NewRecorder()
		was := g.Refused(c.reason)
		h.ServeHTTP(rec, req)
		if rec.Code != c.code {
			t.Errorf("%q: %d, want %d", c.auth, rec.Code, c.code)
		}
		if rec.Header().Get("Cache-Control") != "no-store" {
			t.Errorf("%q: Cache-Control %q", c.auth, rec.Header().Get("Cache-Control"))
		}
		if c.code == 200 && changed != before+1 {
			t.Errorf("%q: the handler did not run", c.auth)
		}
		if c.code != 200 {
			if changed != before {
				t.Errorf("%q: refused, yet the handler ran", c.auth)
			}
			if g.Refused(c.reason) != was+1 {
				t.Errorf("%q: %s count %d, want %d\n%s", c.auth, c.reason, g.Refused(c.reason), was+1, g.Stats())
			}
		}
	}
}

func TestSameOrigin(t *testing.T) {
	g, _ := guard(t)
	changed := 0
	h := g.SameOrigin(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { changed++ }))
	for _, c := range []struct {
		method string
		hdr    []string
		code   int
	}{
		{"POST", []string{"Sec-Fetch-Site", "cross-site"}, 403},
		{"POST", []string{"Origin", "http://evil.example"}, 403},
		{"PUT", []string{"Sec-Fetch-Site", "same-site"}, 403},
		{"POST", []string{"Sec-Fetch-Site", "same-origin"}, 200},
		{"POST", []string{"Origin", "http://ether9.lan"}, 200},
		{"POST", nil, 200}, // curl, the self-test
		{"GET", []string{"Sec-Fetch-Site", "cross-site"}, 200},
	} {
		before, refused := changed, g.Refused(CrossOrigin)
		req := httptest.NewRequest(c.method, "http://ether9.lan/ctl", strings.NewReader("machine poweroff"))
		for i := 0; i+1 < len(c.hdr); i += 2 {
			req.Header.Set(c.hdr[i], c.hdr[i+1])
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != c.code {
			t.Errorf("%s %v: %d, want %d", c.method, c.hdr, rec.Code, c.code)
		}
		ran, counted := changed == before+1, g.Refused(CrossOrigin) == refused+1
		if ran == (c.code == 403) || counted != (c.code == 403) {
			t.Errorf("%s %v: handler ran %v, refusal counted %v", c.method, c.hdr, ran, counted)
		}
	}
}

func TestZeroTokenMatchesNothing(t *testing.T) {
	if (Token{}).Matches("") {
		t.Fatal("the zero token matched the empty string")
	}
	g := NewGuard(Token{}, nil)
	if g.Allow("", "x", "test") {
		t.Fatal("allowed without a token")
	}
}

func TestRefusalLoggedOncePerMinute(t *testing.T) {
	g, logs := guard(t)
	now := time.Unix(1000, 0)
	g.now = func() time.Time { return now }
	for range 100 {
		g.Allow("nope", "10.0.0.1", "POST /ctl")
	}
	g.Allow("nope", "10.0.0.2", "POST /ctl")
	if len(*logs) != 2 {
		t.Fatalf("%d lines logged for 101 refusals from 2 sources, want 2", len(*logs))
	}
	now = now.Add(logEvery)
	g.Allow("nope", "10.0.0.1", "POST /ctl")
	if len(*logs) != 3 {
		t.Fatalf("%d lines after a minute, want 3", len(*logs))
	}
	if got := g.Refused(BadToken); got != 102 {
		t.Fatalf("bad_token %d, want 102", got)
	}
	if !strings.Contains(g.Stats(), "bad_token 102\n") {
		t.Fatalf("stats:\n%s", g.Stats())
	}
}

func TestLoggedSourcesBounded(t *testing.T) {
	g, _ := guard(t)
	for i := range 3 * maxSources {
		g.Allow("", strings.Repeat("x", i%50)+string(rune('a'+i%26))+string(rune(i)), "test")
	}
	if len(g.logged) > maxSources {
		t.Fatalf("%d sources remembered, bound %d", len(g.logged), maxSources)
	}
}

func TestParseToken(t *testing.T) {
	for _, bad := range []string{"", "short", strings.Repeat("a", 257), "0123456789abcdef 01", "0123456789abcdef\x00"} {
		if _, err := ParseToken(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	a, err := NewToken()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewToken()
	if a == b || len(a.String()) != 32 {
		t.Fatalf("tokens %q %q", a, b)
	}
	if _, err := ParseToken(a.String()); err != nil {
		t.Fatalf("a generated token does not parse: %v", err)
	}
}

func FuzzBearer(f *testing.F) {
	for _, s := range []string{"", "Bearer x", "bearer  " + secret, "Basic a", "Bearer a b", "Bearer\t" + secret} {
		f.Add(s)
	}
	tok, _ := ParseToken(secret)
	f.Fuzz(func(t *testing.T, h string) {
		s, ok := Bearer(h)
		if ok && (s == "" || strings.ContainsAny(s, " \t")) {
			t.Fatalf("Bearer(%q) = %q", h, s)
		}
		if tok.Matches(s) && s != secret {
			t.Fatalf("Bearer(%q) = %q matched", h, s)
		}
	})
}

func FuzzAname(f *testing.F) {
	for _, s := range []string{"", "token=", "token=" + secret, "dev", "token=a/b"} {
		f.Add(s)
	}
	tok, _ := ParseToken(secret)
	f.Fuzz(func(t *testing.T, e string) {
		s, ok := Aname(e)
		if ok && (s == "" || AnamePrefix+s != e) {
			t.Fatalf("Aname(%q) = %q", e, s)
		}
		if tok.Matches(s) != (ok && s == secret) {
			t.Fatalf("Aname(%q) = %q, %v", e, s, ok)
		}
	})
}

func FuzzParseToken(f *testing.F) {
	f.Add(secret)
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		tok, err := ParseToken(s)
		if err == nil && (!tok.Matches(s) || len(s) < MinToken) {
			t.Fatalf("ParseToken(%q) accepted but does not match", s)
		}
	})
}
