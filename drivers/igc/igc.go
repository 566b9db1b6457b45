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
	"sync/atomic"

	"github.com/ether9/ether9/drivers/adv"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/nicstat"
	"github.com/ether9/ether9/drivers/ring"
	"github.com/ether9/ether9/drivers/xsk"
)

// Ring geometry and sizes.
const (
	rxDescs    = 256 // and as many TX descriptors
	defaultMTU = 1500
	minMTU     = 68
	maxQueues  = 4                              // the I225 has four queue pairs
	maxMTU     = ring.HalfPage - adv.FrameExtra // one 2 KiB buffer per frame
)

// geometry is every queue pair's: rxDescs descriptors a ring, 2 KiB of
// bounce space a TX descriptor (headers, small frames, software
// segments).
var geometry = adv.Geometry{RxDescs: rxDescs, TxDescs: rxDescs, TxBounceLen: 2048, Rx: adv.Thresholds{P: 8, H: 8, W: 4}, Tx: adv.Thresholds{P: 8, H: 1, W: 16}}

// Device is a running igc controller.
type Device struct {
	adv.Port
	id     ID
	loc    [3]uint8    // PCI bus, device, function
	serial uint64      // PCIe device serial number, 0 if none
	queues []*queue    // Port.Pairs, as the driver's queues
	build  atomic.Bool // the build policy: on lets rings build (seed rule), off forces construct
	rss    atomic.Bool // spread received flows over the queues
}

var (
	_ nic.NIC             = (*Device)(nil)
	_ nic.MulticastFilter = (*Device)(nil) // adv.Port's
	_ xsk.Binder          = (*Device)(nil)
)

// absentCounters are the statistics registers the I225 does not have.
var absentCounters = []uint32{nicstat.SYMERRS, nicstat.SEC, nicstat.TSCTFC}

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
	d := &Device{id: id, loc: [3]uint8{a.Bus, a.Dev, a.Fn}}
	d.Open(dev, "igc", adv.CauseRegs{}, geometry, defaultMTU)
	d.serial = readSerial(dev)
	d.build.Store(true)
	d.rss.Store(true)
	if err := d.reset(); err != nil {
		return nil, err
	}
	if d.Station, err = d.readMAC(); err != nil {
		return nil, err
	}
	n := adv.QueuePairs(dev, maxQueues)
	if err := d.AddQueues(n, d.newQueue); err != nil {
		return nil, err
	}
	d.InitStats(absentCounters...)
	d.Relayout = func(i int) error { return d.queues[i].relayout() }
	// RCTL.LPE on: RLPML, the current maximum frame, is the length
	// limit, so a build-layout buffer never receives past its half page.
	steps := adv.Steps{RSS: d.setupRSS, PHY: d.setupPHY, Interrupts: d.setupInterrupts, Link: d.updateLink}
	if err := d.Up(dev.IRQ, adv.QueueBits(n), maxFrame(d.MTU()), tipgIPGT, steps); err != nil {
		return nil, err
	}
	d.Core.Logf("%s: %s (%v) %04x:%04x mac %x, %d queues, link %+v", d.Name(), id.Name, id.Type, VendorIntel, id.Device, d.Station, len(d.queues), d.LinkState.Load())
	return d, nil
}

// ID is the device id the driver matched.
func (d *Device) ID() ID { return d.id }

// MaxMTU is the largest MTU a 2 KiB receive buffer holds.
func (d *Device) MaxMTU() int { return maxMTU }

// SetMTU implements nic.NIC. Every ring re-decides how it builds packets;
// the length limit moves so that no frame is ever longer than the layout
// in use allows: down before the rings change, up after.
func (d *Device) SetMTU(mtu int) error {
	if mtu < minMTU || mtu > maxMTU {
		return fmt.Errorf("igc %s: mtu %d outside %d..%d (one %d-byte buffer per frame)", d.Name(), mtu, minMTU, maxMTU, ring.HalfPage)
	}
	d.CfgMu.Lock()
	defer d.CfgMu.Unlock()
	if d.Closed.Load() {
		return fmt.Errorf("igc %s: set mtu on a closed device", d.Name())
	}
	old := d.MTU()
	d.Core.SetMaxFrame(maxFrame(min(old, mtu)))
	d.Mtu.Store(int32(mtu))
	var errs []error
	for _, q := range d.queues {
		if err := q.relayout(); err != nil {
			errs = append(errs, err)
		}
	}
	d.Core.SetMaxFrame(maxFrame(mtu))
	return errors.Join(errs...)
}

// Link implements nic.NIC.
func (d *Device) Link() nic.Link { return d.LinkState.Load() }
