// Package status is the HTTP face of a running ether9: a plain-text status
// page, one fact per line, and two endpoints that move bulk data so a host
// can measure TCP throughput and check integrity.
package status

import (
	"fmt"
	"io"
	"time"
)

// Snapshot is the state the status page shows.
type Snapshot struct {
	Uptime   time.Duration
	Platform string // "linux", "sim"
	IOMMU    *IOMMU // nil when there is no VT-d unit
	NICs     []NIC
	// TCP is the stack's TCP counters (segments, retransmissions,
	// recoveries): with the NICs' counters, what a throughput figure is
	// read against.
	TCP []Counter
}

// IOMMU is the VT-d unit's state.
type IOMMU struct {
	Translation bool
	Levels      int    // 3 or 4
	Mode        string // "strict", "deferred"
	Counters    []Counter
	Faults      []string // one line per recorded fault, oldest first
	FaultCount  uint64   // every fault seen since boot, including cleared ones
	// Units are the DMAR table's units, the ones translating and the ones
	// left alone; the lines above add up those translating.
	Units []IOMMUUnit
}

// IOMMUUnit is one DMA-remapping unit.
type IOMMUUnit struct {
	Base    uint64
	Scope   string // what its device scope reaches: "include-all", "bridge 00:1c.0 buses 01-02"
	State   string // "on", "off", "idle" (covers no NIC), "failed"
	Levels  int
	Domains int
	Faults  uint64
}

// NIC is one network controller.
type NIC struct {
	Name     string // "ether0"
	PCI      string // "00:02.0"
	ID       string // "8086:10d3"
	Driver   string
	MAC      string
	Link     string // "up 1000 Mb/s full duplex" or "down"
	IRQ      string // "uio INTx 11" or "none (polling)"
	Addr     string // "10.0.2.15/24"
	Gateway  string
	Counters []Counter
}

// Counter is one named value.
type Counter struct {
	Name  string
	Value uint64
}

// Write prints s as the status page: lines of "subject key value...", in
// a stable order so that grep and diff work on it.
func Write(w io.Writer, s Snapshot) error {
	p := &printer{w: w}
	p.line("ether9 uptime %.3fs", s.Uptime.Seconds())
	p.line("ether9 platform %s", s.Platform)
	if u := s.IOMMU; u != nil {
		if u.Translation {
			p.line("iommu translation on %d-level", u.Levels)
		} else {
			p.line("iommu translation off")
		}
		if u.Mode != "" {
			p.line("iommu mode %s", u.Mode)
		}
		p.line("iommu faults %d", u.FaultCount)
		for _, c := range u.Counters {
			p.line("iommu %s %d", c.Name, c.Value)
		}
		for _, f := range u.Faults {
			p.line("iommu fault %s", f)
		}
		for _, x := range u.Units {
			if x.State == "on" || x.State == "off" {
				p.line("iommu unit %#x %s %d-level domains %d faults %d scope %s", x.Base, x.State, x.Levels, x.Domains, x.Faults, x.Scope)
			} else {
				p.line("iommu unit %#x %s scope %s", x.Base, x.State, x.Scope)
			}
		}
	} else {
		p.line("iommu none")
	}
	for _, n := range s.NICs {
		p.line("%s pci %s %s %s", n.Name, n.PCI, n.ID, n.Driver)
		p.line("%s mac %s", n.Name, n.MAC)
		p.line("%s link %s", n.Name, n.Link)
		if n.IRQ != "" {
			p.line("%s irq %s", n.Name, n.IRQ)
		}
		if n.Addr != "" {
			p.line("%s addr %s", n.Name, n.Addr)
		}
		if n.Gateway != "" {
			p.line("%s gw %s", n.Name, n.Gateway)
		}
		for _, c := range n.Counters {
			p.line("%s %s %d", n.Name, c.Name, c.Value)
		}
	}
	for _, c := range s.TCP {
		p.line("tcp %s %d", c.Name, c.Value)
	}
	return p.err
}

type printer struct {
	w   io.Writer
	err error
}

func (p *printer) line(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format+"\n", args...)
	}
}
