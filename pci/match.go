package pci

import "fmt"

// ID is a vendor and device id pair.
type ID struct {
	Vendor, Device uint16
}

func (id ID) String() string { return fmt.Sprintf("%04x:%04x", id.Vendor, id.Device) }

// Driver is a driver's claim: its name and the ids it drives. Each driver
// package exports one as data; nothing registers itself at init time.
type Driver struct {
	Name string
	IDs  []ID
}

// Matcher binds functions to drivers by exact vendor and device id.
type Matcher struct {
	byID map[ID]string
}

// NewMatcher builds a matcher from driver claims. Two drivers claiming the
// same id, a driver without a name, and an id of all ones are errors.
func NewMatcher(drivers ...Driver) (*Matcher, error) {
	m := &Matcher{byID: make(map[ID]string)}
	for _, d := range drivers {
		if d.Name == "" {
			return nil, fmt.Errorf("pci: driver with ids %v has no name", d.IDs)
		}
		for _, id := range d.IDs {
			if id.Vendor == 0xffff {
				return nil, fmt.Errorf("pci: driver %s claims invalid id %v", d.Name, id)
			}
			if other, ok := m.byID[id]; ok && other != d.Name {
				return nil, fmt.Errorf("pci: id %v claimed by both %s and %s", id, other, d.Name)
			}
			m.byID[id] = d.Name
		}
	}
	return m, nil
}

// Match returns the driver for vendor:device, or "" and false.
func (m *Matcher) Match(vendor, device uint16) (string, bool) {
	name, ok := m.byID[ID{vendor, device}]
	return name, ok
}

// Bind sets Driver on each function a driver claims and returns how many
// were bound. Functions no driver claims keep Driver "".
func (m *Matcher) Bind(fns []*Function) int {
	n := 0
	for _, f := range fns {
		if name, ok := m.Match(f.Vendor, f.Device); ok {
			f.Driver = name
			n++
		}
	}
	return n
}
