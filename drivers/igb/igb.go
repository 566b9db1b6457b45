// Package igb drives the Intel 82575, 82576, 82580, I350, I354, I210,
// I211 and DH89xxCC gigabit controllers: several RX/TX queue pairs with
// RSS, advanced one-buffer RX descriptors on half-page buffers that flip
// and are reused while the stack does not hold them, advanced TX with
// context descriptors (checksum offload, TSO for IPv4 and IPv6), and queue
// takeover by applications (package xsk) in copy or zero-copy mode.
package igb

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/ether9/ether9/drivers/adv"
	"github.com/ether9/ether9/drivers/intr"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/ring"
	"github.com/ether9/ether9/drivers/xsk"
	"github.com/ether9/ether9/kernel"
)

// Ring geometry and sizes.
const (
	rxDescs      = 256
	txDescs      = 256
	txBounceLen  = 2048 // per TX descriptor: headers, small frames, copies
	defaultMTU   = 1500
	ethHdrLen    = 14
	vlanTagLen   = 4
	fcsLen       = 4
	maxQueues    = 4 // queue pairs brought up, at most the MAC's
	txBatchDescs = 64

	// DefaultCopybreak: frames shorter than this are copied and their
	// half-page stays armed.
	DefaultCopybreak = 256
)

// Descriptor thresholds of every queue (RXDCTL, TXDCTL); never changed.
var (
	rxThresholds = adv.Thresholds{P: 8, H: 8, W: 1}
	txThresholds = adv.Thresholds{P: 8, H: 1, W: 1}
)

// Device is a running igb controller.
type Device struct {
	name  string
	id    ID
	info  MACInfo
	fn    uint8
	regs  kernel.Regs
	core  adv.MAC // the MAC steps igb and igc share
	dma   kernel.DMA
	clock kernel.Clock
	irq   adv.Legacy // the causes as the line programs them
	line  *intr.Line // the device's INTx, shared by the queues' poll loops
	logf  func(string, ...any)
	mac   [6]byte

	queues []*queue
	mtu    atomic.Int32
	link   adv.Link
	tso    atomic.Bool
	hw     hwStats
	closed atomic.Bool

	mc       adv.Multicast // the receive filter's groups (mta.go)
	filterMu sync.Mutex
	etqf     [adv.NumETQF]bool
	ttqf     [adv.NumIMIR]bool
}

var (
	_ nic.NIC    = (*Device)(nil)
	_ xsk.Binder = (*Device)(nil)
)

// Probe resets the controller described by dev and brings it up.
func Probe(dev *nic.Device) (nic.NIC, error) { return nic.AsNIC(probe(dev)) }

func probe(dev *nic.Device) (*Device, error) {
	if err := dev.Check("igb"); err != nil {
		return nil, err
	}
	id, info, err := Lookup(dev.Func.Vendor, dev.Func.Device)
	if err != nil {
		return nil, fmt.Errorf("%s at %v: %w", dev.Name, dev.Func.Addr, err)
	}
	d := &Device{
		name: dev.Name, id: id, info: info, fn: dev.Func.Addr.Fn,
		regs: dev.Regs, dma: dev.DMA, clock: dev.Clock, logf: dev.Log(),
	}
	d.core = adv.MAC{Regs: d.regs, Clock: d.clock, Driver: "igb", Name: d.name, Logf: d.logf, Causes: adv.CauseRegs{ICR: ICR, IMS: IMS, IMC: IMC}}
	d.mtu.Store(defaultMTU)
	d.tso.Store(true)
	if err := d.reset(); err != nil {
		return nil, err
	}
	if d.mac, err = d.readMAC(); err != nil {
		return nil, err
	}
	n := min(info.Queues, maxQueues)
	if info.Flags&FlagNoRSS != 0 {
		n = 1
	}
	for i := 0; i < n; i++ {
		q, err := newQueue(d, i)
		if err != nil {
			d.freeQueues()
			return nil, fmt.Errorf("igb %s: queue %d: %w", d.name, i, err)
		}
		d.queues = append(d.queues, q)
	}
	d.irq = adv.Legacy{M: &d.core, Queue: d.queueBits(), OnLink: d.updateLink}
	d.line = intr.NewLine(dev.IRQ, &d.irq)
	d.hw.init(n)
	if err := d.up(); err != nil {
		d.freeQueues()
		return nil, err
	}
	d.logf("%s: %s (%s) %04x:%04x mac %x, %d queues, link %v", d.name, id.Name, info.Type, VendorIntel, id.Device, d.mac, n, d.link.Load())
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
	c.PrepareRx(d.MTU() + ethHdrLen + vlanTagLen + fcsLen)
	d.setupRSS()
	d.regs.Write32(adv.TIPG, tipgCopper)
	for _, q := range d.queues {
		if err := q.startTx(); err != nil {
			return err
		}
		if err := q.startRx(); err != nil {
			return err
		}
	}
	c.EnableRxTx()
	d.mc.Program(d.regs) // the groups survive a reset
	c.SetLinkUp()
	if err := d.restartAutoneg(); err != nil {
		d.logf("%s: phy: %v", d.name, err)
	}
	c.SetDriverLoaded(true)
	d.setupInterrupts()
	d.updateLink()
	return nil
}

// Name implements nic.NIC.
func (d *Device) Name() string { return d.name }

// MAC implements nic.NIC.
func (d *Device) MAC() [6]byte { return d.mac }

// Type is the controller's MAC type.
func (d *Device) Type() MACType { return d.info.Type }

// MTU implements nic.NIC.
func (d *Device) MTU() int { return int(d.mtu.Load()) }

// MaxMTU is the largest MTU a half-page receive buffer holds.
func (d *Device) MaxMTU() int { return ring.HalfPage - ethHdrLen - vlanTagLen }

// SetMTU implements nic.NIC.
func (d *Device) SetMTU(mtu int) error {
	if mtu < 68 || mtu > d.MaxMTU() {
		return fmt.Errorf("igb %s: mtu %d outside 68..%d (one %d-byte buffer per frame)", d.name, mtu, d.MaxMTU(), ring.HalfPage)
	}
	d.mtu.Store(int32(mtu))
	d.core.SetMaxFrame(mtu + ethHdrLen + vlanTagLen + fcsLen)
	return nil
}

// Link implements nic.NIC. It reads STATUS, so a caller polling the link
// sees a change even where the link-change interrupt is lost.
func (d *Device) Link() nic.Link {
	if !d.closed.Load() {
		d.updateLink()
	}
	return d.link.Load()
}

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

// NumQueues implements xsk.Binder.
func (d *Device) NumQueues() int { return len(d.queues) }

// Close stops the controller and frees its rings; nothing stays mapped.
// Sockets still bound are unbound first, their frames returned.
func (d *Device) Close() error {
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
		return fmt.Errorf("igb %s: close: %w", d.name, err)
	}
	return nil
}
