// Package ns is ether9's synthetic file tree: small text files through
// which components show their state and take commands, in the manner of
// Plan 9 devices. Components register files; the tree knows nothing of
// what is behind them. The console shell, the 9P server and the HTTP
// status page all read the same tree.
package ns

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"path"
	"sort"
	"strings"
	"sync"
)

// File is one synthetic file. Read renders its whole content at the time
// of the call, so a reader always sees one consistent snapshot.
type File interface {
	Read() (string, error)
}

// Writer is implemented by files that take commands (ctl files). Write
// gets one command per call; a bad command returns an error and changes
// nothing.
type Writer interface {
	Write(cmd string) error
}

// Stream is a file whose reads follow what happens (a packet capture)
// rather than render a state: each Open is a reader of its own that sees
// what happens from then on, until it is closed or the stream ends. A
// stream shows traffic, so the read-only view does not open it. Its
// Read, for the callers that render files, says what it is.
type Stream interface {
	File
	Open(via Conn) (io.ReadCloser, error)
}

// Conn is the connection a stream's reader goes out on, zero when not
// over the network: a packet capture leaves out its own readers' traffic,
// which would otherwise capture itself without end.
type Conn struct{ Local, Remote netip.AddrPort }

// ParseConn makes a Conn from "host:port" strings (net.Addr.String's);
// what does not parse stays zero.
func ParseConn(local, remote string) Conn {
	l, _ := netip.ParseAddrPort(local)
	r, _ := netip.ParseAddrPort(remote)
	return Conn{Local: l, Remote: r}
}

// Errors the tree returns, wrapped with the path.
var (
	ErrNotExist   = errors.New("file does not exist")
	ErrExist      = errors.New("file already exists")
	ErrIsDir      = errors.New("is a directory")
	ErrNotDir     = errors.New("not a directory")
	ErrPermission = errors.New("permission denied")
	ErrStream     = errors.New("a stream, not a text file: read it with the token over HTTP (GET /ns/...) or 9P")
)

// Entry describes a file or a directory.
type Entry struct {
	Name     string
	Dir      bool
	Writable bool
	Stream   bool // a Stream: read through Open
}

type node struct {
	file     File // nil for a directory
	children map[string]*node
}

// Namespace is the file tree. It is safe for concurrent use.
type Namespace struct {
	mu       *sync.RWMutex // shared with read-only views
	root     *node
	readOnly bool
}

// New returns an empty tree.
func New() *Namespace {
	return &Namespace{mu: new(sync.RWMutex), root: &node{children: map[string]*node{}}}
}

// Clean turns p into the tree's canonical absolute form.
func Clean(p string) string { return path.Clean("/" + p) }

func split(p string) []string {
	p = Clean(p)
	if p == "/" {
		return nil
	}
	return strings.Split(p[1:], "/")
}

// Add registers f at p, creating the directories above it. It fails if p
// or one of its parents is already a file, or p is a directory.
func (n *Namespace) Add(p string, f File) error {
	if f == nil {
		return fmt.Errorf("ns: add %s: nil file", Clean(p))
	}
	elems := split(p)
	if len(elems) == 0 {
		return fmt.Errorf("ns: add /: %w", ErrIsDir)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	d := n.root
	for i, e := range elems[:len(elems)-1] {
		c, ok := d.children[e]
		if !ok {
			c = &node{children: map[string]*node{}}
			d.children[e] = c
		}
		if c.file != nil {
			return fmt.Errorf("ns: add %s: /%s: %w", Clean(p), strings.Join(elems[:i+1], "/"), ErrNotDir)
		}
		d = c
	}
	last := elems[len(elems)-1]
	if _, ok := d.children[last]; ok {
		return fmt.Errorf("ns: add %s: %w", Clean(p), ErrExist)
	}
	d.children[last] = &node{file: f}
	return nil
}

// Remove takes p and everything below it out of the tree.
func (n *Namespace) Remove(p string) error {
	elems := split(p)
	if len(elems) == 0 {
		return fmt.Errorf("ns: remove /: %w", ErrPermission)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	d := n.root
	for _, e := range elems[:len(elems)-1] {
		c, ok := d.children[e]
		if !ok || c.file != nil {
			return fmt.Errorf("ns: remove %s: %w", Clean(p), ErrNotExist)
		}
		d = c
	}
	last := elems[len(elems)-1]
	if _, ok := d.children[last]; !ok {
		return fmt.Errorf("ns: remove %s: %w", Clean(p), ErrNotExist)
	}
	delete(d.children, last)
	return nil
}

func (n *Namespace) lookup(p string) (*node, error) {
	d := n.root
	for _, e := range split(p) {
		if d.file != nil {
			return nil, ErrNotDir
		}
		c, ok := d.children[e]
		if !ok {
			return nil, ErrNotExist
		}
		d = c
	}
	return d, nil
}

// Stat describes the file or directory at p.
func (n *Namespace) Stat(p string) (Entry, error) {
	n.mu.RLock()
	defer n.mu.RUnlock()
	nd, err := n.lookup(p)
	if err != nil {
		return Entry{}, fmt.Errorf("ns: %s: %w", Clean(p), err)
	}
	return n.entry(path.Base(Clean(p)), nd), nil
}

func (n *Namespace) entry(name string, nd *node) Entry {
	e := Entry{Name: name, Dir: nd.file == nil}
	if _, ok := nd.file.(Writer); ok && !n.readOnly {
		e.Writable = true
	}
	_, e.Stream = nd.file.(Stream)
	return e
}

// List returns the entries of the directory at p, sorted by name.
func (n *Namespace) List(p string) ([]Entry, error) {
	n.mu.RLock()
	defer n.mu.RUnlock()
	nd, err := n.lookup(p)
	if err != nil {
		return nil, fmt.Errorf("ns: %s: %w", Clean(p), err)
	}
	if nd.file != nil {
		return nil, fmt.Errorf("ns: %s: %w", Clean(p), ErrNotDir)
	}
	out := make([]Entry, 0, len(nd.children))
	for name, c := range nd.children {
		out = append(out, n.entry(name, c))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (n *Namespace) file(p string) (File, error) {
	n.mu.RLock()
	nd, err := n.lookup(p)
	n.mu.RUnlock()
	if err != nil {
		return nil, fmt.Errorf("ns: %s: %w", Clean(p), err)
	}
	if nd.file == nil {
		return nil, fmt.Errorf("ns: %s: %w", Clean(p), ErrIsDir)
	}
	return nd.file, nil
}

// ReadFile renders the file at p. The tree's lock is not held while the
// file renders, so a slow file delays no one else.
func (n *Namespace) ReadFile(p string) (string, error) {
	f, err := n.file(p)
	if err != nil {
		return "", err
	}
	s, err := f.Read()
	if err != nil {
		return "", fmt.Errorf("ns: read %s: %w", Clean(p), err)
	}
	return s, nil
}

// Open starts a reader of the stream at p. The read-only view refuses:
// a stream shows what the machine's traffic carries.
func (n *Namespace) Open(p string, via Conn) (io.ReadCloser, error) {
	f, err := n.file(p)
	if err != nil {
		return nil, err
	}
	st, ok := f.(Stream)
	if !ok {
		return nil, fmt.Errorf("ns: open %s: not a stream (read it as a file)", Clean(p))
	}
	if n.readOnly {
		return nil, fmt.Errorf("ns: open %s: %w (a stream needs the token)", Clean(p), ErrPermission)
	}
	rc, err := st.Open(via)
	if err != nil {
		return nil, fmt.Errorf("ns: open %s: %w", Clean(p), err)
	}
	return rc, nil
}

// WriteFile sends data to the file at p, one command per non-empty line.
// Lines run in order and the first error stops the rest.
func (n *Namespace) WriteFile(p string, data string) error {
	f, err := n.file(p)
	if err != nil {
		return err
	}
	w, ok := f.(Writer)
	if !ok {
		return fmt.Errorf("ns: write %s: %w", Clean(p), ErrPermission)
	}
	if n.readOnly {
		return fmt.Errorf("ns: write %s: %w (read-only)", Clean(p), ErrPermission)
	}
	for _, line := range strings.Split(data, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if err := w.Write(line); err != nil {
			return fmt.Errorf("ns: write %s: %w", Clean(p), err)
		}
	}
	return nil
}

// ReadOnly returns a view of the same tree that refuses every write.
func (n *Namespace) ReadOnly() *Namespace {
	return &Namespace{mu: n.mu, root: n.root, readOnly: true}
}
