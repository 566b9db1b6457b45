package ring

import "github.com/ether9/ether9/kernel"

// Cursor is where a receive ring stands: the hardware owns the armed
// descriptors [Clean, Tail). Every receive ring keeps one and arms its
// own kind of buffer through Refill.
type Cursor struct {
	n     int
	clean int // next descriptor the driver examines
	next  int // next descriptor to arm (the tail)
	armed int
}

// NewCursor is the cursor of a ring of n descriptors, nothing armed.
func NewCursor(n int) Cursor { return Cursor{n: n} }

// Clean is the index of the next descriptor to examine.
func (c *Cursor) Clean() int { return c.clean }

// Tail is the value for the tail register after Refill.
func (c *Cursor) Tail() int { return c.next }

// Armed is the number of descriptors the hardware owns.
func (c *Cursor) Armed() int { return c.armed }

// Refill arms free descriptors, one short of the whole ring so that a full
// ring is told from an empty one: arm(i) readies descriptor i's buffer and
// returns its device address, write(i, addr) puts that in the descriptor.
// It reports whether the tail moved. A failure to arm stops the loop; the
// next Refill tries again.
func (c *Cursor) Refill(arm func(i int) (kernel.DMAAddr, error), write func(i int, addr kernel.DMAAddr)) bool {
	moved := false
	for c.armed < c.n-1 {
		i := c.next
		addr, err := arm(i)
		if err != nil {
			break
		}
		write(i, addr)
		if c.next++; c.next == c.n {
			c.next = 0
		}
		c.armed++
		moved = true
	}
	return moved
}

// Advance gives the descriptor at Clean back to the driver.
func (c *Cursor) Advance() {
	if c.armed == 0 {
		return
	}
	if c.clean++; c.clean == c.n {
		c.clean = 0
	}
	c.armed--
}

// Rewind forgets the position after the device's ring was reset.
func (c *Cursor) Rewind() { c.clean, c.next, c.armed = 0, 0, 0 }
