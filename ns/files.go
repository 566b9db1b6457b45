package ns

import "io"

// ReadFunc is a read-only file rendered by a function.
type ReadFunc func() (string, error)

func (f ReadFunc) Read() (string, error) { return f() }

// Text is a read-only file rendered by a function that cannot fail.
type Text func() string

func (f Text) Read() (string, error) { return f(), nil }

// Ctl is a file that renders state on read and takes commands on write.
type Ctl struct {
	Render func() (string, error) // nil: reads are empty
	Do     func(cmd string) error
}

func (c Ctl) Read() (string, error) {
	if c.Render == nil {
		return "", nil
	}
	return c.Render()
}

func (c Ctl) Write(cmd string) error { return c.Do(cmd) }

// StreamFunc is a stream (a packet capture) whose readers a function
// opens. Read, for those that render files, says what it is.
type StreamFunc func(via Conn) (io.ReadCloser, error)

func (f StreamFunc) Read() (string, error)                { return "", ErrStream }
func (f StreamFunc) Open(via Conn) (io.ReadCloser, error) { return f(via) }
