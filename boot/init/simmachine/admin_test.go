package simmachine

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/ether9/ether9/ns/admin"
)

// testToken is the machine's ether9.token in these tests.
const testToken = "sim-test-token-0123456789"

// testConfig is the default machine with testToken.
// serving starts the machine with testConfig and waits for its HTTP
// server; it returns the machine, its console and the forward's base
// URL, and the machine closes when the test ends.
func serving(t *testing.T) (*Host, *console, string) {
	t.Helper()
	con := &console{}
	h, err := Start(context.Background(), testConfig(con))
	if err != nil {
		t.Fatalf("start: %v\nconsole:\n%s", err, con.text())
	}
	t.Cleanup(func() { h.Close() })
	con.waitFor(t, "http: listening :80")
	return h, con, "http://" + h.Forward.Addr().String()
}

func testConfig(con *console) Config {
	opt := Options(1)
	tok, err := admin.ParseToken(testToken)
	if err != nil {
		panic(err) // a constant
	}
	opt.Token = tok
	return Config{Listen: "127.0.0.1:0", Logf: con.logf, Options: &opt}
}

// send makes a request with the given Authorization (none when "") and
// extra headers, and returns the status and body.
func send(t *testing.T, method, url, auth, body string, hdr ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func authGet(url string) (*http.Response, error) {
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	return http.DefaultClient.Do(req)
}

func authPost(url, contentType string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequest("POST", url, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Authorization", "Bearer "+testToken)
	return http.DefaultClient.Do(req)
}

// TestControlNeedsToken: from the network, without the token, nothing
// changes state or moves bulk data; each refusal is counted by reason;
// the status page, the namespace and /metrics stay readable; a
// cross-origin POST is refused even with the token; with it, control
// works.
func TestControlNeedsToken(t *testing.T) {
	h, con, base := serving(t)
	state := func() string {
		t.Helper()
		var b strings.Builder
		for _, p := range []string{"/dev/iommu/ctl", "/net/ether0/ctl"} {
			s, err := h.System.Namespace().ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			b.WriteString(s)
		}
		return b.String()
	}
	before := state()

	const bad = "Bearer not-the-token-0123456789"
	for _, c := range []struct {
		method, path, auth, body string
	}{
		{"POST", "/ctl", "", "iommu deferred 16\nether0 copybreak 0"},
		{"POST", "/ctl", bad, "iommu deferred 16"},
		{"POST", "/ctl", "Basic " + testToken, "machine poweroff"},
		{"GET", "/source?bytes=1048576", "", ""},
		{"POST", "/sink", "", "data"},
		{"GET", "/ctl", "", ""},
	} {
		if code, body := send(t, c.method, base+c.path, c.auth, c.body); code != http.StatusUnauthorized {
			t.Errorf("%s %s with %q: %d %q, want 401", c.method, c.path, c.auth, code, body)
		}
	}
	if after := state(); after != before {
		t.Fatalf("refused requests changed the state:\n%s\nwas:\n%s", after, before)
	}
	_, refused := send(t, "GET", base+"/ns/dev/admin/refused", "", "")
	for _, want := range []string{"no_token 4\n", "bad_token 2\n"} {
		if !strings.Contains(refused, want) {
			t.Errorf("/ns/dev/admin/refused lacks %q:\n%s", want, refused)
		}
	}
	if n := strings.Count(con.text(), "admin: refused"); n != 1 {
		t.Errorf("%d refusals logged from one source, want 1:\n%s", n, con.text())
	}
	for _, p := range []string{"/", "/ns/dev/iommu/stats"} {
		if code, body := send(t, "GET", base+p, "", ""); code != http.StatusOK {
			t.Errorf("GET %s without the token: %d %q", p, code, body)
		}
	}

	// A page on another site, in a browser holding the token, is refused.
	if code, _ := send(t, "POST", base+"/ctl", "Bearer "+testToken, "iommu deferred 16", "Sec-Fetch-Site", "cross-site"); code != http.StatusForbidden {
		t.Errorf("cross-origin POST /ctl: %d, want 403", code)
	}
	if code, _ := send(t, "POST", base+"/ctl", "Bearer "+testToken, "iommu deferred 16", "Origin", "http://evil.example"); code != http.StatusForbidden {
		t.Errorf("POST /ctl with a foreign Origin: %d, want 403", code)
	}
	if after := state(); after != before {
		t.Fatalf("a cross-origin request changed the state:\n%s", after)
	}

	code, body := send(t, "POST", base+"/ctl", "Bearer "+testToken, "iommu deferred 16")
	if code != http.StatusOK || body != "ok 1\n" {
		t.Fatalf("POST /ctl with the token: %d %q", code, body)
	}
	if s, _ := h.System.Namespace().ReadFile("/dev/iommu/ctl"); !strings.Contains(s, "deferred") {
		t.Fatalf("iommu ctl after the granted command: %q", s)
	}
}

// TestAdminWhere: with ether9.admin= naming a prefix the peer is not in,
// control is refused even with the token, before the body is read; the
// status page still answers.
func TestAdminWhere(t *testing.T) {
	con := &console{}
	cfg := testConfig(con)
	w, err := admin.ParseWhere("192.168.77.0/24")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Options.Admin = w
	h, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("start: %v\nconsole:\n%s", err, con.text())
	}
	defer h.Close()
	con.waitFor(t, "http: listening :80")
	base := "http://" + h.Forward.Addr().String()
	before, _ := h.System.Namespace().ReadFile("/dev/iommu/ctl")
	if code, body := send(t, "POST", base+"/ctl", "Bearer "+testToken, "iommu deferred 16"); code != http.StatusForbidden {
		t.Fatalf("POST /ctl from outside ether9.admin=: %d %q, want 403", code, body)
	}
	if after, _ := h.System.Namespace().ReadFile("/dev/iommu/ctl"); after != before {
		t.Fatalf("a refused request changed the iommu: %q, was %q", after, before)
	}
	if code, _ := send(t, "GET", base+"/", "", ""); code != http.StatusOK {
		t.Fatalf("status page: %d", code)
	}
	if r, _ := h.System.Namespace().ReadFile("/dev/admin/refused"); !strings.Contains(r, "not_admin 1\n") {
		t.Fatalf("/dev/admin/refused:\n%s", r)
	}
}

// TestAdminWhereNIC: ether9.admin=ether0 admits what arrives on ether0's
// address (the forward reaches it there), with the token.
func TestAdminWhereNIC(t *testing.T) {
	for _, c := range []struct {
		where string
		code  int
	}{{"ether0", http.StatusOK}, {"ether1", http.StatusForbidden}} {
		con := &console{}
		cfg := testConfig(con)
		w, err := admin.ParseWhere(c.where)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Options.Admin = w
		h, err := Start(context.Background(), cfg)
		if err != nil {
			t.Fatalf("start: %v\nconsole:\n%s", err, con.text())
		}
		con.waitFor(t, "http: listening :80")
		code, body := send(t, "POST", "http://"+h.Forward.Addr().String()+"/ctl", "Bearer "+testToken, "iommu deferred 16")
		h.Close()
		if code != c.code {
			t.Errorf("ether9.admin=%s: POST /ctl %d %q, want %d", c.where, code, body, c.code)
		}
	}
}
