// Package igb drives the Intel 82575, 82576, 82580, I350, I354, I210,
// I211 and DH89xxCC gigabit controllers: several RX/TX queue pairs with
// RSS, advanced one-buffer RX descriptors on half-page buffers that flip
// and are reused while the stack does not hold them, advanced TX with
// context descriptors (checksum offload, TSO for IPv4 and IPv6), and queue
// takeover by applications (package xsk) in copy or zero-copy mode.
package igb

import (
	"fmt"

	"github.com/ether9/ether9/drivers/adv"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/ring"
	"github.com/ether9/ether9/drivers/xsk"
)

// Ring geometry and sizes.
const (
	rxDescs      = 256 // and as many TX descriptors
	defaultMTU   = 1500
	maxQueues    = 4 // queue pairs brought up, at most the MAC's
	txBatchDescs = 64

	// DefaultCopybreak: frames shorter than this are copied and their
	// half-page stays armed.
	DefaultCopybreak = 256
)

// geometry is every queue pair's: rxDescs descriptors a ring, 2 KiB of
// bounce space a TX descriptor (headers, small frames, copies).
var geometry = adv.Geometry{RxDescs: rxDescs, TxDescs: rxDescs, TxBounceLen: 2048, Rx: adv.Thresholds{P: 8, H: 8, W: 1}, Tx: adv.Thresholds{P: 8, H: 1, W: 1}}

// Device is a running igb controller.
type Device struct {
	adv.Port
	id     ID
	info   MACInfo
	fn     uint8
	queues []*queue // Port.Pairs, as the driver's queues
	etqf   [adv.NumETQF]bool
	ttqf   [adv.NumIMIR]bool
}

var (
	_ nic.NIC             = (*Device)(nil)
	_ nic.MulticastFilter = (*Device)(nil) // adv.Port's
	_ xsk.Binder          = (*Device)(nil)
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
	d := &Device{id: id, info: info, fn: dev.Func.Addr.Fn}
	d.Open(dev, "igb", adv.CauseRegs{ICR: ICR, IMS: IMS, IMC: IMC}, geometry, defaultMTU)
	if err := d.reset(); err != nil {
		return nil, err
	}
	if d.Station, err = d.readMAC(); err != nil {
		return nil, err
	}
	n := adv.QueuePairs(dev, queuePairs(info))
	if err := d.AddQueues(n, d.newQueue); err != nil {
		return nil, err
	}
	d.InitStats()
	if err := d.Up(dev.IRQ, d.queueBits(), d.MTU()+adv.FrameExtra, tipgCopper, d.steps()); err != nil {
		return nil, err
	}
	d.Core.Logf("%s: %s (%s) %04x:%04x mac %x, %d queues, link %v", d.Name(), id.Name, info.Type, VendorIntel, id.Device, d.Station, n, d.LinkState.Load())
	return d, nil
}

// steps are igb's own bring-up steps (adv.Port.Up).
func (d *Device) steps() adv.Steps {
	return adv.Steps{
		RSS: d.setupRSS,
		PHY: func() {
			if err := d.restartAutoneg(); err != nil {
				d.Core.Logf("%s: phy: %v", d.Name(), err)
			}
		},
		Interrupts: d.setupInterrupts,
		Link:       d.updateLink,
	}
}

// Type is the controller's MAC type.
func (d *Device) Type() MACType { return d.info.Type }

// MaxMTU is the largest MTU a half-page receive buffer holds.
func (d *Device) MaxMTU() int { return ring.HalfPage - adv.EthHdrLen - adv.VLANTagLen }

// SetMTU implements nic.NIC.
func (d *Device) SetMTU(mtu int) error {
	if mtu < 68 || mtu > d.MaxMTU() {
		return fmt.Errorf("igb %s: mtu %d outside 68..%d (one %d-byte buffer per frame)", d.Name(), mtu, d.MaxMTU(), ring.HalfPage)
	}
	d.Mtu.Store(int32(mtu))
	d.Core.SetMaxFrame(mtu + adv.FrameExtra)
	return nil
}

// Link implements nic.NIC. It reads STATUS, so a caller polling the link
// sees a change even where the link-change interrupt is lost.
func (d *Device) Link() nic.Link {
	if !d.Closed.Load() {
		d.updateLink()
	}
	return d.LinkState.Load()
}
