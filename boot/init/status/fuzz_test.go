package status

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzCtlBody: any POST /ctl body is applied line by line up to the
// first line refused, never past it, and the answer says how many were
// applied; a body over maxCtl applies nothing.
func FuzzCtlBody(f *testing.F) {
	for _, s := range []string{"", "iommu strict", "a\nbad\nb", "\n\n  x  \r\n", strings.Repeat("x", maxCtl+1), "ether0 copybreak 0\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		var applied []string
		ctl := func(cmd string) error {
			if strings.Contains(cmd, "bad") {
				return fmt.Errorf("refused")
			}
			applied = append(applied, cmd)
			return nil
		}
		h := Handler(func() Snapshot { return Snapshot{} }, ctl)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", "/ctl", strings.NewReader(body)))
		if len(body) > maxCtl {
			if rec.Code != http.StatusRequestEntityTooLarge || len(applied) != 0 {
				t.Fatalf("%d-byte body: %d, %d applied", len(body), rec.Code, len(applied))
			}
			return
		}
		var want []string
		refused := false
		for _, l := range strings.Split(body, "\n") {
			l = strings.TrimSpace(l)
			if l == "" {
				continue
			}
			if strings.Contains(l, "bad") {
				refused = true
				break
			}
			want = append(want, l)
		}
		if fmt.Sprint(applied) != fmt.Sprint(want) {
			t.Fatalf("body %q: applied %q, want %q", body, applied, want)
		}
		switch {
		case refused && rec.Code != http.StatusBadRequest:
			t.Fatalf("body %q: %d after a refused line", body, rec.Code)
		case !refused && (rec.Code != http.StatusOK || rec.Body.String() != fmt.Sprintf("ok %d\n", len(want))):
			t.Fatalf("body %q: %d %q", body, rec.Code, rec.Body.String())
		}
	})
}
