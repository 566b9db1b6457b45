package ninep

import (
	"fmt"
	"io"
	"strings"

	"github.com/hugelgupf/p9/p9"

	"github.com/ether9/ether9/ns/admin"
)

// Client reads and writes a served namespace.
type Client struct {
	c    *p9.Client
	root p9.File
}

// Dial attaches to the server at the other end of conn, read-only.
func Dial(conn io.ReadWriteCloser) (*Client, error) { return DialToken(conn, "") }

// DialToken attaches with the token, which writes need; "" attaches
// read-only.
func DialToken(conn io.ReadWriteCloser, token string) (*Client, error) {
	c, err := p9.NewClient(conn, p9.WithMessageSize(64<<10))
	if err != nil {
		return nil, fmt.Errorf("9p: version: %w", err)
	}
	aname := "/"
	if token != "" {
		aname = admin.AnamePrefix + token
	}
	root, err := c.Attach(aname)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("9p: attach: %w", err)
	}
	return &Client{c: c, root: root}, nil
}

// Close ends the session.
func (c *Client) Close() error {
	c.root.Close()
	return c.c.Close()
}

func (c *Client) walk(p string) (p9.File, error) {
	var names []string
	for _, e := range strings.Split(p, "/") {
		if e != "" {
			names = append(names, e)
		}
	}
	_, f, err := c.root.Walk(names)
	if err != nil {
		return nil, fmt.Errorf("9p: walk %s: %w", p, err)
	}
	return f, nil
}

// Entry is one directory entry as the server describes it.
type Entry struct {
	Name string
	Dir  bool
}

// List reads the directory p.
func (c *Client) List(p string) ([]Entry, error) {
	f, err := c.walk(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, _, err := f.Open(p9.ReadOnly); err != nil {
		return nil, fmt.Errorf("9p: open %s: %w", p, err)
	}
	var out []Entry
	var off uint64
	for {
		ds, err := f.Readdir(off, 64<<10)
		if err != nil {
			return nil, fmt.Errorf("9p: readdir %s: %w", p, err)
		}
		if len(ds) == 0 {
			return out, nil
		}
		for _, d := range ds {
			out = append(out, Entry{Name: d.Name, Dir: d.QID.Type == p9.TypeDir})
			off = d.Offset
		}
	}
}

// Read returns the content of the file p.
func (c *Client) Read(p string) (string, error) {
	f, err := c.walk(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if _, _, err := f.Open(p9.ReadOnly); err != nil {
		return "", fmt.Errorf("9p: open %s: %w", p, err)
	}
	var b strings.Builder
	buf := make([]byte, 32<<10)
	for off := int64(0); ; {
		n, err := f.ReadAt(buf, off)
		b.Write(buf[:n])
		off += int64(n)
		if err == io.EOF || (err == nil && n == 0) {
			return b.String(), nil
		}
		if err != nil {
			return "", fmt.Errorf("9p: read %s: %w", p, err)
		}
	}
}

// Stream opens the stream p (a packet capture): reads return its bytes
// as they come, io.EOF when it ends; Close ends the reader on the server.
func (c *Client) Stream(p string) (io.ReadCloser, error) {
	f, err := c.walk(p)
	if err != nil {
		return nil, err
	}
	if _, _, err := f.Open(p9.ReadOnly); err != nil {
		f.Close()
		return nil, fmt.Errorf("9p: open %s: %w", p, err)
	}
	return &streamReader{f: f, p: p}, nil
}

type streamReader struct {
	f   p9.File
	p   string
	off int64
}

func (s *streamReader) Read(b []byte) (int, error) {
	n, err := s.f.ReadAt(b, s.off)
	s.off += int64(n)
	if err != nil && err != io.EOF {
		return n, fmt.Errorf("9p: read %s: %w", s.p, err)
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

func (s *streamReader) Close() error { return s.f.Close() }

// Write sends data to the file p in one write.
func (c *Client) Write(p, data string) error {
	f, err := c.walk(p)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, _, err := f.Open(p9.WriteOnly); err != nil {
		return fmt.Errorf("9p: open %s for writing: %w", p, err)
	}
	if _, err := f.WriteAt([]byte(data), 0); err != nil {
		return fmt.Errorf("9p: write %s: %w", p, err)
	}
	return nil
}
