// Package probe binds enumerated PCI functions to NIC drivers: it finds
// the functions a driver claims, turns on memory decoding, gives each one
// its own IOMMU domain (or untranslated DMA), turns on bus mastering and
// runs the driver's probe, naming the NICs ether0, ether1, ... in bus
// order. Boot code and tests use it the same way on every platform.
package probe

import (
	"errors"
	"fmt"

	"github.com/ether9/ether9/drivers/e1000e"
	"github.com/ether9/ether9/drivers/igb"
	"github.com/ether9/ether9/drivers/igc"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/ring"
	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/iommu"
	"github.com/ether9/ether9/pci"
)

// A domain is the DMA view probe hands a driver behind VT-d: its fault
// count drives the receive fault rule and its holes debug
// inject-unmapped-rx (drivers/nic's capability list).
var (
	_ ring.FaultCounter = (*iommu.Domain)(nil)
	_ ring.Holer        = (*iommu.Domain)(nil)
)

// Driver is one NIC driver: the ids it claims and its probe.
type Driver struct {
	Name  string
	IDs   []pci.ID
	Probe func(*nic.Device) (nic.NIC, error)
	// INTx says the driver programs its device's legacy interrupt; only
	// then is Platform.IRQ asked for one. A driver that routes its causes
	// to MSI-X vectors would sleep on a line that never fires.
	INTx bool
	// Vectors, if set, is how many MSI-X vectors the driver routes its
	// causes to on dev (nic.Device.Vectors), 0 for none. Where the
	// platform has vectors (Platform.MSI) probe enables exactly that
	// many, or none, before Probe runs.
	Vectors func(dev *nic.Device) int
}

// Drivers returns the built-in drivers.
func Drivers() []Driver {
	e1000eIDs := make([]pci.ID, len(e1000e.IDs))
	for i, id := range e1000e.IDs {
		e1000eIDs[i] = pci.ID{Vendor: e1000e.VendorIntel, Device: id.Device}
	}
	igbIDs := make([]pci.ID, len(igb.IDs))
	for i, id := range igb.IDs {
		igbIDs[i] = pci.ID{Vendor: igb.VendorIntel, Device: id.Device}
	}
	igcIDs := make([]pci.ID, len(igc.IDs))
	for i, id := range igc.IDs {
		igcIDs[i] = pci.ID{Vendor: igc.VendorIntel, Device: id.Device}
	}
	return []Driver{
		{Name: "e1000e", IDs: e1000eIDs, Probe: e1000e.Probe, INTx: true},
		{Name: "igb", IDs: igbIDs, Probe: igb.Probe, INTx: true, Vectors: igb.Vectors},
		{Name: "igc", IDs: igcIDs, Probe: igc.Probe, INTx: true, Vectors: igc.Vectors},
	}
}

// Platform is what binding needs from the machine.
type Platform struct {
	Config pci.Config
	// BAR returns the register window of one of f's BARs.
	BAR func(f *pci.Function, bar int) (kernel.Regs, error)
	// IOMMU translates device DMA; nil means translation off.
	IOMMU *iommu.Unit
	// IOMMUFor, when set, picks the unit that translates f's DMA instead
	// (machines with several units, each with its device scope): nil with
	// no error means translation off for f, an error fails f's bind.
	IOMMUFor func(f *pci.Function) (*iommu.Unit, error)
	Memory   kernel.Memory
	Clock    kernel.Clock
	// IRQ returns how to wait for f's one interrupt, its INTx line; nil
	// where the platform routes no lines (f's one interrupt is then its
	// MSI, from a vector of MSI). It is asked only when f does not get
	// MSI-X vectors.
	IRQ func(f *pci.Function) kernel.Waiter
	// MSI hands out a free interrupt vector for a message (MSI-X, or
	// MSI); nil where the platform has none (the Linux platform: INTx
	// through uio).
	MSI func() (kernel.MSI, error)
	// OneVector gives each function its one interrupt even where it has
	// MSI-X (ether9.msix=off).
	OneVector bool
	// Queues bounds each NIC's queue pairs (nic.Device.Queues); 0: as
	// many as its driver brings up.
	Queues int
	Logf   func(format string, args ...any)
	// Enum controls enumeration.
	Enum pci.Options
	// Drivers to bind; nil means Drivers().
	Drivers []Driver
}

// Bound is one function a driver claimed, with its NIC or why it failed.
type Bound struct {
	Func    *pci.Function
	Driver  string
	NIC     nic.NIC
	DMA     kernel.DMA
	Vectors []kernel.MSI  // the MSI-X vectors its driver sleeps on; nil without
	IRQ     kernel.Waiter // its one interrupt (line or MSI) otherwise; nil when it polls
	Err     error
}

// Result is everything Bind found.
type Result struct {
	Functions []*pci.Function // every enumerated function
	Bound     []Bound         // functions a driver claimed, in bus order
}

// NICs returns the NICs that came up.
func (r *Result) NICs() []nic.NIC {
	var out []nic.NIC
	for _, b := range r.Bound {
		if b.NIC != nil {
			out = append(out, b.NIC)
		}
	}
	return out
}

// Err joins the failures of enumeration and of every claimed function.
func (r *Result) Err() error {
	var errs []error
	for _, b := range r.Bound {
		if b.Err != nil {
			errs = append(errs, b.Err)
		}
	}
	return errors.Join(errs...)
}

// Bind enumerates PCI, probes every function a driver claims and returns
// the result. A function that fails to probe is reported in its Bound
// entry and left with bus mastering off; the others carry on. The error
// is for failures that stop everything (enumeration found nothing usable,
// a bad driver table, a platform without memory).
func Bind(p Platform) (*Result, error) {
	if p.Config == nil || p.BAR == nil || p.Memory == nil || p.Clock == nil {
		return nil, errors.New("probe: platform lacks config access, BAR windows, memory or clock")
	}
	logf := p.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	drivers := p.Drivers
	if drivers == nil {
		drivers = Drivers()
	}
	claims := make([]pci.Driver, len(drivers))
	byName := make(map[string]Driver, len(drivers))
	for i, d := range drivers {
		if d.Probe == nil {
			return nil, fmt.Errorf("probe: driver %q has no probe function", d.Name)
		}
		claims[i] = pci.Driver{Name: d.Name, IDs: d.IDs}
		byName[d.Name] = d
	}
	m, err := pci.NewMatcher(claims...)
	if err != nil {
		return nil, fmt.Errorf("probe: %w", err)
	}
	fns, enumErr := pci.Enumerate(p.Config, p.Enum)
	if len(fns) == 0 && enumErr != nil {
		return nil, fmt.Errorf("probe: enumerate: %w", enumErr)
	}
	if enumErr != nil {
		logf("probe: enumeration incomplete: %v", enumErr)
	}
	m.Bind(fns)
	res := &Result{Functions: fns}
	next := 0
	for _, f := range fns {
		if f.Driver == "" {
			continue
		}
		name := fmt.Sprintf("ether%d", next)
		b := Bound{Func: f, Driver: f.Driver}
		b.Err = bindOne(p, byName[f.Driver], &b, name, logf)
		if b.Err != nil {
			logf("probe: %v %s: %v", f.Addr, f.Driver, b.Err)
		} else {
			next++
		}
		res.Bound = append(res.Bound, b)
	}
	return res, nil
}

// bindOne brings b's function up under driver d: its NIC, DMA and
// interrupts go into b.
func bindOne(p Platform, d Driver, b *Bound, name string, logf func(string, ...any)) error {
	f := b.Func
	if !f.BARs[0].Mappable() {
		return fmt.Errorf("%s %v: BAR0 is not a sized memory BAR (%v, %d bytes)", d.Name, f.Addr, f.BARs[0].Kind, f.BARs[0].Size)
	}
	if err := pci.EnableMemory(p.Config, f.Addr); err != nil {
		return fmt.Errorf("%s %v: enable memory: %w", d.Name, f.Addr, err)
	}
	regs, err := p.BAR(f, 0)
	if err != nil {
		return fmt.Errorf("%s %v: BAR0 window: %w", d.Name, f.Addr, err)
	}
	unit := p.IOMMU
	if p.IOMMUFor != nil {
		if unit, err = p.IOMMUFor(f); err != nil {
			return fmt.Errorf("%s %v: iommu: %w", d.Name, f.Addr, err)
		}
	}
	var dma kernel.DMA
	if unit != nil {
		dom, err := unit.Domain(iommu.SourceID(f.Addr.Bus, f.Addr.Dev, f.Addr.Fn))
		if err != nil {
			return fmt.Errorf("%s %v: iommu domain: %w", d.Name, f.Addr, err)
		}
		// A unit is turned on by its first domain, so one that covers
		// nothing we drive is never touched.
		if !unit.Enabled() {
			if err := unit.Enable(); err != nil {
				return fmt.Errorf("%s %v: enable iommu: %w", d.Name, f.Addr, err)
			}
		}
		dma = dom
	} else {
		dma = iommu.Passthrough(p.Memory)
	}
	// Bus mastering only once DMA has somewhere safe to go.
	if err := pci.EnableBusMaster(p.Config, f.Addr); err != nil {
		return fmt.Errorf("%s %v: enable bus master: %w", d.Name, f.Addr, err)
	}
	dev := &nic.Device{
		Name: name, Func: f, Config: p.Config, Regs: regs, DMA: dma,
		Clock: p.Clock, IRQ: kernel.PollWaiter{}, Logf: logf, Queues: p.Queues,
	}
	msi := interrupts(p, d, dev, messages(unit, f), logf)
	n, err := d.Probe(dev)
	if err != nil {
		if e := pci.DisableBusMaster(p.Config, f.Addr); e != nil {
			err = errors.Join(err, fmt.Errorf("disable bus master: %w", e))
		}
		if dev.Vectors != nil {
			if e := disableMSIX(p, f, dev.Vectors); e != nil {
				err = errors.Join(err, fmt.Errorf("disable msi-x: %w", e))
			}
		}
		if msi != nil {
			if e := disableMSI(p, f, msi); e != nil {
				err = errors.Join(err, fmt.Errorf("disable msi: %w", e))
			}
		}
		return err
	}
	b.NIC, b.DMA, b.Vectors = n, dma, dev.Vectors
	if _, polls := dev.IRQ.(kernel.PollWaiter); !polls {
		b.IRQ = dev.IRQ
	}
	return nil
}

// interrupts gives dev its interrupts: the MSI-X vectors its driver asks
// for where the platform has vectors, else the function's one interrupt
// (its line from Platform.IRQ, or on a platform without lines its MSI),
// else none (the driver polls). Which one is logged, except a line: the
// platform's IRQ logs its own. It returns the one MSI vector it took.
func interrupts(p Platform, d Driver, dev *nic.Device, msg messenger, logf func(string, ...any)) kernel.MSI {
	f := dev.Func
	if p.MSI != nil && d.Vectors != nil && !p.OneVector {
		if n := d.Vectors(dev); n > 0 {
			vecs, err := enableMSIX(p, f, n, msg)
			if err == nil {
				dev.Vectors = vecs
				logf("irq %v: MSI-X, %d vectors (%s)", f.Addr, len(vecs), vectorList(vecs))
				return nil
			}
			logf("irq %v: MSI-X: %v", f.Addr, err)
		}
	}
	if !d.INTx {
		return nil
	}
	if p.IRQ != nil {
		if w := p.IRQ(f); w != nil {
			dev.IRQ = w
		}
		return nil
	}
	if p.MSI == nil {
		return nil
	}
	v, err := enableMSI(p, f, msg)
	if err != nil {
		logf("irq %v: none (polling): %v", f.Addr, err)
		return nil
	}
	logf("irq %v: %v", f.Addr, v)
	dev.IRQ = v
	return v
}
