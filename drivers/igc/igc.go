// Package igc drives the Intel I225 and I226 2.5 GbE controllers (and the
// I220-V and I221-V cut-downs): up to four RX/TX queue pairs with RSS,
// advanced descriptors, checksum offload and TSO, link at 10 Mb/s to
// 2.5 Gb/s, and an RX path that builds each packet around its receive
// buffer when the frame fits (build) or copies the headers into a small
// head and attaches the rest (construct), decided per ring.
package igc

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/ether9/ether9/drivers/adv"
	"github.com/ether9/ether9/drivers/intr"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/nicstat"
	"github.com/ether9/ether9/drivers/ring"
	"github.com/ether9/ether9/kernel"
)

// Ring geometry and sizes.
const (
	rxDescs     = 256
	txDescs     = 256
	txBounceLen = 2048 // per TX descriptor: headers, small frames, software segments
	defaultMTU  = 1500
	minMTU      = 68
	ethHdrLen   = 14
	vlanTagLen  = 4
	fcsLen      = 4
	frameExtra  = ethHdrLen + fcsLen + vlanTagLen // what a max frame adds to the MTU
	maxQueues   = 4                               // the I225 has four queue pairs
	maxMTU      = ring.HalfPage - frameExtra      // one 2 KiB buffer per frame
)

// Descriptor thresholds of every queue (RXDCTL, TXDCTL); never changed.
var (
	rxThresholds = adv.Thresholds{P: 8, H: 8, W: 4}
	txThresholds = adv.Thresholds{P: 8, H: 1, W: 16}
)

// Device is a running igc controller.
type Device struct {
	name   string
	id     ID
	loc    [3]uint8 // PCI bus, device, function
	serial uint64   // PCIe device serial number, 0 if none
	regs   kernel.Regs
	core   adv.MAC // the MAC steps igb and igc share
	dma    kernel.DMA
	clock  kernel.Clock
	irq    adv.Legacy // the causes as the line programs them
	line   *intr.Line // the device's INTx, shared by the queues' poll loops
	logf   func(string, ...any)
	mac    [6]byte

	queues []*queue
	cfgMu  sync.Mutex // MTU and RX layout changes
	mtu    atomic.Int32
	build  atomic.Bool // the build policy: on lets rings build (seed rule), off forces construct
	link   adv.Link
	tso    atomic.Bool
	rss    atomic.Bool // spread received flows over the queues
	hw     nicstat.Hardware
	closed atomic.Bool

	mc       adv.Multicast // the receive filter's groups (mta.go)
	filterMu sync.Mutex    // EtherType filter slots (filter.go)
}

var _ nic.NIC = (*Device)(nil)

// Probe resets the controller described by dev and brings it up.
func Probe(dev *nic.Device) (nic.NIC, error) { return nic.AsNIC(probe(dev)) }

func probe(dev *nic.Device) (*Device, error) {
	if err := dev.Check("igc"); err != nil {
		return nil, err
	}
	id, err := Lookup(dev.Func.Vendor, dev.Func.Device)
	if err != nil {
		return nil, fmt.Errorf("%s at %v: %w", dev.Name, dev.Func.Addr, err)
	}
	a := dev.Func.Addr
	d := &Device{
		name: dev.Name, id: id, loc: [3]uint8{a.Bus, a.Dev, a.Fn},
		regs: dev.Regs, dma: dev.DMA, clock: dev.Clock, logf: dev.Log(),
	}
	d.core = adv.MAC{Regs: d.regs, Clock: d.clock, Driver: "igc", Name: d.name, Logf: d.logf}
	d.serial = readSerial(dev)
	d.mtu.Store(defaultMTU)
	d.tso.Store(true)
	d.build.Store(true)
	d.rss.Store(true)
	if err := d.reset(); err != nil {
		return nil, err
	}
	if d.mac, err = d.readMAC(); err != nil {
		return nil, err
	}
	for i := 0; i < maxQueues; i++ {
		q, err := newQueue(d, i)
		if err != nil {
			d.freeQueues()
			return nil, fmt.Errorf("igc %s: queue %d: %w", d.name, i, err)
		}
		d.queues = append(d.queues, q)
	}
	d.irq = adv.Legacy{M: &d.core, Queue: adv.QueueBits(len(d.queues)), OnLink: d.updateLink}
	d.line = intr.NewLine(dev.IRQ, &d.irq)
	d.initStats()
	if err := d.up(); err != nil {
		d.freeQueues()
		return nil, err
	}
	d.logf("%s: %s (%v) %04x:%04x mac %x, %d queues, link %+v", d.name, id.Name, id.Type, VendorIntel, id.Device, d.mac, len(d.queues), d.link.Load())
	return d, nil
}

func (d *Device) freeQueues() {
	for _, q := range d.queues {
		q.free()
	}
	d.queues = nil
}

// up programs filters, RSS, the rings and the link and enables RX and TX.
func (d *Device) up() error {
	c := &d.core
	c.PrepareRx(maxFrame(d.MTU()))
	d.setupRSS()
	d.regs.Write32(adv.TIPG, tipgIPGT)
	for _, q := range d.queues {
		if err := q.startTx(); err != nil {
			return err
		}
		if err := q.startRx(); err != nil {
			return err
		}
	}
	// RCTL.LPE on: RLPML, the current maximum frame, is the length
	// limit, so a build-layout buffer never receives past its half page.
	c.EnableRxTx()
	d.mc.Program(d.regs) // the groups survive a reset
	d.setupPHY()
	c.SetLinkUp()
	c.SetDriverLoaded(true)
	d.setupInterrupts()
	d.updateLink()
	return nil
}

// Name implements nic.NIC.
func (d *Device) Name() string { return d.name }

// MAC implements nic.NIC.
func (d *Device) MAC() [6]byte { return d.mac }

// ID is the device id the driver matched.
func (d *Device) ID() ID { return d.id }

// MTU implements nic.NIC.
func (d *Device) MTU() int { return int(d.mtu.Load()) }

// MaxMTU is the largest MTU a 2 KiB receive buffer holds.
func (d *Device) MaxMTU() int { return maxMTU }

// SetMTU implements nic.NIC. Every ring re-decides how it builds packets;
// the length limit moves so that no frame is ever longer than the layout
// in use allows: down before the rings change, up after.
func (d *Device) SetMTU(mtu int) error {
	if mtu < minMTU || mtu > maxMTU {
		return fmt.Errorf("igc %s: mtu %d outside %d..%d (one %d-byte buffer per frame)", d.name, mtu, minMTU, maxMTU, ring.HalfPage)
	}
	d.cfgMu.Lock()
	defer d.cfgMu.Unlock()
	if d.closed.Load() {
		return fmt.Errorf("igc %s: set mtu on a closed device", d.name)
	}
	old := d.MTU()
	d.core.SetMaxFrame(maxFrame(min(old, mtu)))
	d.mtu.Store(int32(mtu))
	var errs []error
	for _, q := range d.queues {
		if err := q.relayout(); err != nil {
			errs = append(errs, err)
		}
	}
	d.core.SetMaxFrame(maxFrame(mtu))
	return errors.Join(errs...)
}

// Link implements nic.NIC.
func (d *Device) Link() nic.Link { return d.link.Load() }

// Features implements nic.NIC (adv.Features).
func (d *Device) Features() nic.Features { return adv.Features(d.tso.Load()) }

// Queues implements nic.NIC.
func (d *Device) Queues() []nic.Queue {
	out := make([]nic.Queue, len(d.queues))
	for i, q := range d.queues {
		out[i] = q
	}
	return out
}

// Close stops the controller and frees its rings; nothing stays mapped.
func (d *Device) Close() error {
	d.cfgMu.Lock()
	defer d.cfgMu.Unlock()
	if d.closed.Swap(true) {
		return nil
	}
	d.core.Shutdown(len(d.queues))
	var errs []error
	for _, q := range d.queues {
		if err := q.close(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("igc %s: close: %w", d.name, err)
	}
	return nil
}
