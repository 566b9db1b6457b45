package system

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// The profiles answer as go tool pprof expects them: an index, named
// profiles as gzipped protocol buffers or, with debug, text; a CPU
// profile for the seconds asked, one at a time.
func TestServeProfiles(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(serveProfiles))
	defer srv.Close()
	get := func(path string) (int, string, []byte) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), b
	}
	gunzips := func(b []byte) bool {
		z, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return false
		}
		_, err = io.ReadAll(z)
		return err == nil
	}
	if code, _, b := get("/debug/pprof/"); code != 200 || !strings.Contains(string(b), " goroutine\n") || !strings.Contains(string(b), " heap\n") {
		t.Errorf("index: %d %q", code, b)
	}
	if code, ct, b := get("/debug/pprof/goroutine?debug=1"); code != 200 || !strings.HasPrefix(ct, "text/plain") || !strings.Contains(string(b), "goroutine profile:") {
		t.Errorf("goroutine?debug=1: %d %s %.60q", code, ct, b)
	}
	if code, ct, b := get("/debug/pprof/heap?gc=1"); code != 200 || ct != "application/octet-stream" || !gunzips(b) {
		t.Errorf("heap: %d %s, %d bytes, gzip %v", code, ct, len(b), gunzips(b))
	}
	if code, _, _ := get("/debug/pprof/nosuch"); code != http.StatusNotFound {
		t.Errorf("an unknown profile: %d", code)
	}
	for _, bad := range []string{"0", "-1", "x", "100000"} {
		if code, _, _ := get("/debug/pprof/profile?seconds=" + bad); code != http.StatusBadRequest {
			t.Errorf("profile?seconds=%s: %d", bad, code)
		}
	}
	// Two CPU profiles at once: one runs, the other is refused.
	var wg sync.WaitGroup
	codes := make([]int, 2)
	bodies := make([][]byte, 2)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i], _, bodies[i] = get("/debug/pprof/profile?seconds=1")
		}()
	}
	wg.Wait()
	ok, refused := 0, 0
	for i, c := range codes {
		switch {
		case c == 200 && gunzips(bodies[i]):
			ok++
		case c == http.StatusConflict:
			refused++
		}
	}
	if ok != 1 || refused != 1 {
		t.Errorf("two CPU profiles at once: %v, want one profile and one refusal", codes)
	}
}
