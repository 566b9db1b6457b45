// Package ninep serves a namespace over 9P2000.L. A file's content is
// rendered once when it is opened, so every read of one open sees one
// snapshot; each write is one command to the file. A stream (a packet
// capture) is read as it comes, only by a client attached with the token.
package ninep

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/hugelgupf/p9/fsimpl/readdir"
	"github.com/hugelgupf/p9/fsimpl/templatefs"
	"github.com/hugelgupf/p9/linux"
	"github.com/hugelgupf/p9/p9"

	"github.com/ether9/ether9/ns"
	"github.com/ether9/ether9/ns/admin"
)

// Port is the 9P port.
const Port = 564

// Server serves one namespace.
type Server struct {
	all      *ns.Namespace // what a client attached with the token sees
	ro       *ns.Namespace // what the others see
	writable bool
	guard    *admin.Guard
}

// New serves n read-only. A client that attaches with the guard's token
// ("token=SECRET" as the aname, or as the first element of a walk from
// the root) may also read the streams (a capture shows traffic) and,
// with writable, write the files that take commands. Writes refused for
// lack of either are counted by the guard.
func New(n *ns.Namespace, writable bool, g *admin.Guard) *Server {
	return &Server{all: n, ro: n.ReadOnly(), writable: writable, guard: g}
}

// Serve accepts connections on l until ctx is done or l fails.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	stop := context.AfterFunc(ctx, func() { l.Close() })
	defer stop()
	for {
		c, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("9p: accept: %w", err)
		}
		go s.ServeConn(c)
	}
}

// ServeConn serves one connection until it closes.
func (s *Server) ServeConn(c net.Conn) error {
	// The connection's end closes its streams: the server waits for
	// every request, and a read of a quiet stream would wait forever.
	ctx, gone := context.WithCancel(context.Background())
	defer gone()
	r := &lingerReader{Conn: c, gone: gone}
	// A server per connection, so that its files know whom they serve.
	source := c.RemoteAddr().String()
	if h, _, err := net.SplitHostPort(source); err == nil {
		source = h
	}
	a := attacher{s: s, ctx: ctx, source: source, local: c.LocalAddr().String(), remote: c.RemoteAddr().String()}
	return p9.NewServer(a).Handle(r, c)
}

// lingerReader holds back the read error that ends a connection for a
// moment. The p9 server starts a receiving goroutine per request, and that
// goroutine registers with the connection's WaitGroup only once it runs;
// the goroutine that sees the end of the stream first waits on that group
// at once. The pause lets late starters register before the wait begins.
// It also says, at once, that the connection is gone.
type lingerReader struct {
	net.Conn
	gone func()
}

const linger = 20 * time.Millisecond

func (l *lingerReader) Read(p []byte) (int, error) {
	n, err := l.Conn.Read(p)
	if err != nil {
		l.gone()
		time.Sleep(linger)
	}
	return n, err
}

type attacher struct {
	s             *Server
	ctx           context.Context // done when the connection is
	source        string
	local, remote string // host:port, for ether9.admin=
}

func (a attacher) Attach() (p9.File, error) {
	return &file{n: a.s.ro, srv: a.s, source: a.source, conn: &a, path: "/"}, nil
}

// file is one fid: a directory or a file of the tree.
type file struct {
	p9.DefaultWalkGetAttr
	templatefs.NotSymlinkFile
	templatefs.XattrUnimplemented
	templatefs.NoopRenamed
	templatefs.NotLockable

	n       *ns.Namespace // the server's all or ro
	srv     *Server
	source  string // the client's address, for the refusal log
	conn    *attacher
	path    string
	content []byte        // rendered at Open
	stream  io.ReadCloser // a stream's reader, from Open
}

func qidOf(p string, dir bool) p9.QID {
	h := fnv.New64a()
	h.Write([]byte(p))
	q := p9.QID{Type: p9.TypeRegular, Path: h.Sum64()}
	if dir {
		q.Type = p9.TypeDir
	}
	return q
}

// errno maps the tree's errors to the ones a 9P client expects.
func errno(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ns.ErrNotExist):
		return linux.ENOENT
	case errors.Is(err, ns.ErrNotDir):
		return linux.ENOTDIR
	case errors.Is(err, ns.ErrIsDir):
		return linux.EISDIR
	case errors.Is(err, ns.ErrPermission):
		return linux.EROFS
	}
	// A command the file refused: the client sees EINVAL; the text is in
	// the server's reply only for clients that keep it.
	return linux.EINVAL
}

func (f *file) stat() (ns.Entry, error) {
	e, err := f.n.Stat(f.path)
	return e, errno(err)
}

func (f *file) Walk(names []string) ([]p9.QID, p9.File, error) {
	p := f.path
	qids := make([]p9.QID, 0, len(names))
	n := f.n
	if len(names) > 0 && p == "/" {
		if tok, ok := admin.Aname(names[0]); ok || strings.HasPrefix(names[0], admin.AnamePrefix) {
			if !f.srv.guard.Admit(f.conn.local, f.conn.remote, "9p attach") {
				return nil, nil, linux.EACCES
			}
			if !f.srv.guard.Allow(tok, f.source, "9p attach") {
				return nil, nil, linux.EACCES
			}
			n = f.srv.all
			qids = append(qids, qidOf("/", true))
			names = names[1:]
		}
	}
	for _, name := range names {
		if name == "" || name == "." || name == ".." || path.Base(name) != name {
			return nil, nil, linux.ENOENT
		}
		p = path.Join(p, name)
		e, err := n.Stat(p)
		if err != nil {
			return nil, nil, errno(err)
		}
		qids = append(qids, qidOf(p, e.Dir))
	}
	return qids, &file{n: n, srv: f.srv, source: f.source, conn: f.conn, path: p}, nil
}

func (f *file) StatFS() (p9.FSStat, error) {
	return p9.FSStat{Type: 0x01021997, BlockSize: 4096, NameLength: 255}, nil
}

func (f *file) GetAttr(req p9.AttrMask) (p9.QID, p9.AttrMask, p9.Attr, error) {
	e, err := f.stat()
	if err != nil {
		return p9.QID{}, p9.AttrMask{}, p9.Attr{}, err
	}
	attr := p9.Attr{Mode: p9.ModeRegular | 0444, NLink: 1, BlockSize: 4096}
	if e.Dir {
		attr.Mode, attr.NLink = p9.ModeDirectory|0555, 2
	} else if e.Writable {
		attr.Mode |= 0200
	}
	if f.content != nil {
		attr.Size = uint64(len(f.content))
	}
	valid := p9.AttrMask{Mode: true, NLink: true, UID: true, GID: true, Size: true, Blocks: true}
	return qidOf(f.path, e.Dir), valid, attr, nil
}

func (f *file) Open(mode p9.OpenFlags) (p9.QID, uint32, error) {
	e, err := f.stat()
	if err != nil {
		return p9.QID{}, 0, err
	}
	q := qidOf(f.path, e.Dir)
	if e.Dir {
		if mode.Mode() != p9.ReadOnly {
			return p9.QID{}, 0, linux.EISDIR
		}
		return q, 0, nil
	}
	if mode.Mode() != p9.ReadOnly && (!e.Writable || !f.srv.writable) {
		f.refuseWrite()
		return p9.QID{}, 0, linux.EROFS
	}
	if e.Stream {
		return q, 0, f.openStream()
	}
	if mode.Mode() != p9.WriteOnly {
		s, err := f.n.ReadFile(f.path)
		if err != nil {
			return p9.QID{}, 0, errno(err)
		}
		f.content = []byte(s)
	}
	return q, 0, nil
}

// refuseWrite counts a write refused for want of the token: one to a
// file that would take it from a client attached with the token.
func (f *file) refuseWrite() {
	if f.n == f.srv.all && f.srv.writable {
		return
	}
	if e, err := f.srv.all.Stat(f.path); err != nil || !e.Writable {
		return
	}
	reason := admin.NoToken
	if !f.srv.writable {
		reason = admin.ReadOnly
	}
	f.srv.guard.Refuse(reason, f.source, "9p write "+f.path)
}

// openStream starts a reader of the stream for a client attached with
// the token; it ends with the fid or the connection.
func (f *file) openStream() error {
	if f.n != f.srv.all {
		f.srv.guard.Refuse(admin.NoToken, f.source, "9p read "+f.path)
		return linux.EACCES
	}
	rc, err := f.n.Open(f.path, ns.ParseConn(f.conn.local, f.conn.remote))
	if err != nil {
		return errno(err)
	}
	f.stream = &onceCloser{ReadCloser: rc}
	context.AfterFunc(f.conn.ctx, func() { f.stream.Close() })
	return nil
}

// onceCloser closes its reader once: the fid's clunk and the connection's
// end may both try, at once.
type onceCloser struct {
	io.ReadCloser
	once sync.Once
}

func (o *onceCloser) Close() error {
	o.once.Do(func() { o.ReadCloser.Close() })
	return nil
}

// Close implements p9.File: a stream's reader ends with its fid.
func (f *file) Close() error {
	if f.stream != nil {
		f.stream.Close()
	}
	return nil
}

// ReadAt reads a snapshot at off, or a stream's next bytes wherever the
// client thinks it is: a stream has no offsets.
func (f *file) ReadAt(p []byte, off int64) (int, error) {
	if f.stream != nil {
		n, err := f.stream.Read(p)
		if err != nil && n == 0 {
			return 0, nil // the end of the stream
		}
		return n, nil
	}
	if off >= int64(len(f.content)) {
		return 0, nil
	}
	return copy(p, f.content[off:]), nil
}

func (f *file) WriteAt(p []byte, off int64) (int, error) {
	if err := f.n.WriteFile(f.path, string(p)); err != nil {
		return 0, errno(err)
	}
	return len(p), nil
}

func (f *file) Readdir(offset uint64, count uint32) (p9.Dirents, error) {
	ents, err := f.n.List(f.path)
	if err != nil {
		return nil, errno(err)
	}
	names := make([]string, len(ents))
	qids := make(map[string]p9.QID, len(ents))
	for i, e := range ents {
		names[i] = e.Name
		qids[e.Name] = qidOf(path.Join(f.path, e.Name), e.Dir)
	}
	return readdir.Readdir(offset, count, names, qids)
}

// SetAttr accepts truncation of a writable file (a shell's "echo cmd >
// ctl" opens with O_TRUNC) and nothing else.
func (f *file) SetAttr(valid p9.SetAttrMask, attr p9.SetAttr) error {
	e, err := f.stat()
	if err != nil {
		return err
	}
	if !e.Writable {
		return linux.EROFS
	}
	if valid.Size && attr.Size != 0 {
		return linux.EINVAL
	}
	return nil
}

func (f *file) FSync() error { return nil }
func (f *file) Flush() error { return nil }

func (f *file) Create(string, p9.OpenFlags, p9.FileMode, p9.UID, p9.GID) (p9.File, p9.QID, uint32, error) {
	return nil, p9.QID{}, 0, linux.EPERM
}
func (f *file) Mkdir(string, p9.FileMode, p9.UID, p9.GID) (p9.QID, error) {
	return p9.QID{}, linux.EPERM
}
func (f *file) Symlink(string, string, p9.UID, p9.GID) (p9.QID, error) {
	return p9.QID{}, linux.EPERM
}
func (f *file) Link(p9.File, string) error { return linux.EPERM }
func (f *file) Mknod(string, p9.FileMode, uint32, uint32, p9.UID, p9.GID) (p9.QID, error) {
	return p9.QID{}, linux.EPERM
}
func (f *file) RenameAt(string, p9.File, string) error { return linux.EPERM }
func (f *file) UnlinkAt(string, uint32) error          { return linux.EPERM }
func (f *file) Remove() error                          { return linux.EPERM }
func (f *file) Rename(p9.File, string) error           { return linux.EPERM }

var _ p9.File = (*file)(nil)
