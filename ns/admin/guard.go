package admin

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"sort"
	"strings"
	"sync"
	"time"
)

// Reasons a request is refused, the names of the counters in Guard.Stats.
const (
	NoToken     = "no_token"     // the request carried no credential
	BadToken    = "bad_token"    // it carried one that does not match
	ReadOnly    = "read_only"    // 9P writes are off (ether9.9p=ro)
	CrossOrigin = "cross_origin" // a browser sent it from another site's page
	NotAdmin    = "not_admin"    // from where ether9.admin= does not admit
)

// logEvery is how often a refusal from one source is logged: a scan or a
// flood must not fill the console.
const logEvery = time.Minute

// maxSources bounds the sources remembered for logging; past it, those not
// logged within logEvery are forgotten.
const maxSources = 1024

// Guard decides whether a control request may proceed, and counts and
// logs those it refuses.
type Guard struct {
	tok   Token
	where Where
	nicOf func(local netip.Addr) string // the interface an address is on
	logf  func(format string, args ...any)
	now   func() time.Time

	mu      sync.Mutex
	refused map[string]uint64
	logged  map[string]time.Time // source: when last logged
}

// NewGuard guards with tok; refusals are logged through logf.
func NewGuard(tok Token, logf func(format string, args ...any)) *Guard {
	return &Guard{tok: tok, logf: logf, now: time.Now,
		refused: map[string]uint64{NoToken: 0, BadToken: 0, ReadOnly: 0, CrossOrigin: 0, NotAdmin: 0},
		logged:  map[string]time.Time{}}
}

// Restrict admits control only from where w says; nicOf names the
// interface a local address belongs to. Call it before serving.
func (g *Guard) Restrict(w Where, nicOf func(local netip.Addr) string) {
	g.where, g.nicOf = w, nicOf
}

// Admit says whether a request that arrived at local from remote
// ("host:port" or an address) may reach control at all; it counts and
// logs a refusal. It looks at nothing the client sent but its address.
func (g *Guard) Admit(local, remote, what string) bool {
	if g.where.Any() {
		return true
	}
	r, _ := parseAddr(remote)
	nic := ""
	if l, ok := parseAddr(local); ok && g.nicOf != nil {
		nic = g.nicOf(l)
	}
	if g.where.Admits(nic, r) {
		return true
	}
	g.Refuse(NotAdmin, host(remote), what)
	return false
}

func parseAddr(s string) (netip.Addr, bool) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap(), true
	}
	a, err := netip.ParseAddr(s)
	return a.Unmap(), err == nil
}

// Allow says whether secret is the token; it counts and logs a refusal.
// what names the request for the log ("POST /ctl", "9p attach").
func (g *Guard) Allow(secret, source, what string) bool {
	if secret == "" {
		g.Refuse(NoToken, source, what)
		return false
	}
	if !g.tok.Matches(secret) {
		g.Refuse(BadToken, source, what)
		return false
	}
	return true
}

// Refuse counts a refusal for reason and logs it, once per source per
// logEvery.
func (g *Guard) Refuse(reason, source, what string) {
	g.mu.Lock()
	g.refused[reason]++
	n := g.refused[reason]
	now := g.now()
	last, seen := g.logged[source]
	log := !seen || now.Sub(last) >= logEvery
	if log {
		if len(g.logged) >= maxSources {
			for s, t := range g.logged {
				if now.Sub(t) >= logEvery {
					delete(g.logged, s)
				}
			}
		}
		if len(g.logged) < maxSources {
			g.logged[source] = now
		}
	}
	g.mu.Unlock()
	if log && g.logf != nil {
		g.logf("admin: refused %s from %s: %s (%d so far; more from it are counted, not logged, for %v)", what, source, reason, n, logEvery)
	}
}

// Stats renders the refusal counters, "reason count" per line, sorted.
func (g *Guard) Stats() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	names := make([]string, 0, len(g.refused))
	for k := range g.refused {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, k := range names {
		fmt.Fprintf(&b, "%s %d\n", k, g.refused[k])
	}
	return b.String()
}

// Refused is the count for one reason.
func (g *Guard) Refused(reason string) uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.refused[reason]
}

// Protect serves h only to requests carrying the token as a bearer token;
// the others get 401 before h sees them, so a refused request changes
// nothing. Every answer, granted or refused, is marked not cacheable.
func (g *Guard) Protect(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		local := ""
		if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
			local = a.String()
		}
		if !g.Admit(local, r.RemoteAddr, r.Method+" "+r.URL.Path) {
			http.Error(w, "admin: control is not served to this address (ether9.admin=)", http.StatusForbidden)
			return
		}
		var secret string
		if v := r.Header.Get("Authorization"); v != "" {
			tok, ok := Bearer(v)
			if !ok {
				tok = "\x00" // present but malformed: a bad token, not a missing one
			}
			secret = tok
		}
		if !g.Allow(secret, host(r.RemoteAddr), r.Method+" "+r.URL.Path) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="ether9"`)
			http.Error(w, "admin: this needs the token (Authorization: Bearer TOKEN; the serial console printed it at boot)", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// SameOrigin refuses, with 403, state-changing requests (any method but
// GET, HEAD and OPTIONS) that a browser sent from another site's page
// (http.CrossOriginProtection: Sec-Fetch-Site, else Origin against Host),
// so that a page cannot use a browser that holds the token. Requests
// from outside a browser carry neither header and pass.
func (g *Guard) SameOrigin(h http.Handler) http.Handler {
	p := http.NewCrossOriginProtection()
	p.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.Refuse(CrossOrigin, host(r.RemoteAddr), r.Method+" "+r.URL.Path)
		w.Header().Set("Cache-Control", "no-store")
		http.Error(w, "admin: cross-origin request refused", http.StatusForbidden)
	}))
	return p.Handler(h)
}

// host is the address part of a remote address, so that one client's
// many ports are one source.
func host(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}
