package ether9

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ether9/ether9/boot/init/system"
	"github.com/ether9/ether9/netstack"
	"github.com/ether9/ether9/ns"
)

// env is what every run of a program shares: the system, the CA roots,
// the HTTP transport and its connections.
type env struct {
	sys     *system.System
	name    string
	dnsNext atomic.Uint32 // the next DNS server to ask, round robin
	// roots and transport are made on first use: parsing the 150 or so
	// built-in roots took 135 ms of a QEMU boot's 0.6 s to HTTP-ready,
	// and a program that never speaks TLS should not wait for them.
	roots     func() (*x509.CertPool, error)
	transport func() *http.Transport
	resolver  *net.Resolver
}

// newEnv makes a program's environment on sys, its CA roots from roots
// (Roots, but for tests), called at most once.
func newEnv(sys *system.System, name string, roots func() (*x509.CertPool, error)) *env {
	e := &env{sys: sys, name: name, roots: sync.OnceValues(roots)}
	e.resolver = &net.Resolver{PreferGo: true, Dial: e.dialDNS}
	e.transport = sync.OnceValue(func() *http.Transport {
		return &http.Transport{
			DialContext:           e.dial,
			TLSClientConfig:       e.tlsConfig(),
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          16,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ExpectContinueTimeout: time.Second,
		}
	})
	return e
}

// machine is one run's view: what it opens is closed when it ends.
func (e *env) machine() *Machine {
	m := &Machine{env: e, open: map[io.Closer]struct{}{}}
	m.log = slog.New(&lineHandler{logf: e.sys.Logf, prefix: e.name + ": "})
	return m
}

// Machine is the running machine as a program sees it: the network
// through ether9's stack, the namespace, the console.
type Machine struct {
	*env
	log *slog.Logger

	mu    sync.Mutex
	open  map[io.Closer]struct{} // listeners and packet conns of this run
	files []string               // namespace files this run bound
}

// Stack is the gVisor stack, for what the methods here do not offer
// (routes, forwarding, raw endpoints).
func (m *Machine) Stack() *netstack.Stack { return m.sys.Stack() }

// System is the running system: its NICs, options and status page.
func (m *Machine) System() *system.System { return m.sys }

// Resolver resolves names by asking the DNS servers the DHCP leases
// name, and those of ether9.dns=, over the machine's stack.
func (m *Machine) Resolver() *net.Resolver { return m.resolver }

// TLSConfig is a client configuration trusting the CA roots built into
// the program (Roots).
func (m *Machine) TLSConfig() *tls.Config { return m.tlsConfig() }

func (e *env) tlsConfig() *tls.Config {
	roots, _ := e.roots() // an empty pool trusts nothing, which fails safe
	return &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
}

// HTTPClient is an HTTP client over the machine's stack that resolves
// with Resolver and verifies TLS against the built-in roots. Its
// connections are shared by every client it returns.
func (m *Machine) HTTPClient() *http.Client {
	return &http.Client{Transport: m.transport()}
}

// Log is a logger whose records become console lines (kept in
// /dev/kmesg too), "NAME: message key=value".
func (m *Machine) Log() *slog.Logger { return m.log }

// Logf writes one console line, prefixed with the program's name.
func (m *Machine) Logf(format string, args ...any) {
	m.sys.Logf("%s: %s", m.name, fmt.Sprintf(format, args...))
}

// Namespace is the machine's file tree, served on the console shell,
// over 9P and under /ns/ of the status page. Bind adds to it.
func (m *Machine) Namespace() *ns.Namespace { return m.sys.Namespace() }

// Bind adds the program's file f at path ("/hello/stats"), beside /net
// and /dev; it is removed when this run of the program ends, so that the
// next run binds it again.
func (m *Machine) Bind(path string, f ns.File) error {
	if err := m.Namespace().Add(path, f); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.files = append(m.files, path)
	return nil
}

// Status is the system's HTTP face (status page, /ns/ files), for a
// program that serves it beside its own handlers.
func (m *Machine) Status() http.Handler { return m.sys.Handler() }

// track remembers c until this run ends or c is closed.
func (m *Machine) track(c io.Closer) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.open[c] = struct{}{}
}

func (m *Machine) untrack(c io.Closer) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.open, c)
}

// closeAll closes what the run left open and unbinds its files.
func (m *Machine) closeAll() {
	m.mu.Lock()
	open, files := m.open, m.files
	m.open, m.files = map[io.Closer]struct{}{}, nil
	m.mu.Unlock()
	for c := range open {
		c.Close()
	}
	for _, p := range files {
		m.Namespace().Remove(p)
	}
}

// lineHandler turns slog records into console lines.
type lineHandler struct {
	logf   func(string, ...any)
	prefix string
	group  string // "g." for WithGroup("g"): prefixes the keys after it
	attrs  string
}

func (h *lineHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *lineHandler) Handle(_ context.Context, r slog.Record) error {
	line := h.prefix
	if r.Level != slog.LevelInfo {
		line += r.Level.String() + " "
	}
	line += r.Message + h.attrs
	r.Attrs(func(a slog.Attr) bool {
		line += " " + attrString(h.group, a)
		return true
	})
	h.logf("%s", line)
	return nil
}

func (h *lineHandler) WithAttrs(as []slog.Attr) slog.Handler {
	n := *h
	for _, a := range as {
		n.attrs += " " + attrString(h.group, a)
	}
	return &n
}

func (h *lineHandler) WithGroup(name string) slog.Handler {
	n := *h
	n.group += name + "."
	return &n
}

func attrString(group string, a slog.Attr) string {
	v := a.Value.Resolve().String()
	if v == "" || containsSpace(v) {
		v = fmt.Sprintf("%q", v)
	}
	return group + a.Key + "=" + v
}

func containsSpace(s string) bool { return strings.ContainsAny(s, " \t\n\"=") }
