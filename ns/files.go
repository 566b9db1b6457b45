package ns

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
