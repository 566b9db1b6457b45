package main

import (
	"net/http"
	"strings"

	"github.com/ether9/ether9/ns/admin"
)

// withToken gives the machine the token its control needs and the runner
// uses: the one -append names (ether9.token=), else a fresh one added to
// the command line.
func withToken(o options) (options, error) {
	for _, w := range strings.Fields(o.appendTo) {
		if t, ok := strings.CutPrefix(w, "ether9.token="); ok {
			o.token = t
			return o, nil
		}
	}
	t, err := admin.NewToken()
	if err != nil {
		return o, err
	}
	o.token = t.String()
	o.appendTo = strings.TrimSpace(o.appendTo + " ether9.token=" + o.token)
	return o, nil
}

// bearer carries the token on every request it sends.
type bearer struct {
	token string
	next  http.RoundTripper // nil: http.DefaultTransport
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	next := b.next
	if next == nil {
		next = http.DefaultTransport
	}
	return next.RoundTrip(r)
}
