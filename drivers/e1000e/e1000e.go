// Package e1000e drives the Intel 82571..82583, 80003ES2LAN and ICH/PCH
// integrated (I217, I218, I219) gigabit controllers: one RX and one TX
// queue with extended RX descriptors, copybreak, checksum offload and TSO
// with the family's quirks.
package e1000e

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/nicstat"
	"github.com/ether9/ether9/drivers/ring"
	"github.com/ether9/ether9/kernel"
)

// Ring geometry and buffer sizes.
const (
	rxDescs     = 256
	txDescs     = 256
	rxBufSize   = 2048  // RCTL.BSIZE 2048
	txBounceLen = 2048  // per TX descriptor: a whole MTU frame
	maxTSO      = 65535 // the longest GSO packet, headers included
	// txCopyMax: every packet, TSO payloads included, is copied into
	// bounce space (as many slots as it needs), not mapped. Behind an
	// IOMMU a map is page-table writes and its unmap an IOTLB
	// invalidation, and on the Linux-hosted platform a map is also an
	// mlock and a pagemap read: on the simulated machine a 64,000-byte
	// TSO packet costs 0.65-0.92x as much copied as mapped
	// (BenchmarkTx/tso64000), in QEMU a map and its unmap about 300 us.
	txCopyMax  = maxTSO
	defaultMTU = 1500
	ethHdrLen  = 14
	vlanTagLen = 4

	// DefaultCopybreak is the driver's default with untranslated DMA, as
	// in Linux.
	DefaultCopybreak = 256
	// TranslatedCopybreak is the copybreak behind an IOMMU until it is
	// measured (Tune) and when measuring fails: every frame is copied and
	// every buffer stays mapped, since a fresh buffer's map and the
	// handed-up one's unmap (an IOTLB invalidation) usually cost more than
	// the copy (the copybreak seed: 1166 ns per buffer at copybreak 0
	// against 562 at 2048 with the IOMMU on).
	TranslatedCopybreak = rxBufSize
)

// Device is a running e1000e controller: the function (reset, link,
// filters, statistics, ctl) and its one queue pair, q.
type Device struct {
	name  string
	id    ID
	info  MACInfo
	regs  kernel.Regs
	dma   kernel.DMA
	clock kernel.Clock
	irq   kernel.Waiter
	logf  func(string, ...any)
	mac   [6]byte

	q           queue
	cbCosts     atomic.Pointer[ring.CopybreakCosts] // as copybreak auto last measured them
	cbGen       atomic.Uint64                       // bumped by each copybreak ctl (measureCopybreak)
	cbMu        sync.Mutex                          // one copybreak measurement at a time
	mtu         atomic.Int32
	rctl        uint32     // RCTL as programmed, without LPE, UPE and MPE
	filterMu    sync.Mutex // serialises RCTL and MTA writes after probe
	rxStopped   bool       // RCTL.EN held off while the RX ring is rebuilt; filterMu
	mc          multicast
	linkMu      sync.Mutex
	link        atomic.Pointer[nic.Link]
	tsoMode     atomic.Uint32
	tso         atomic.Bool
	tsoWhy      atomic.Pointer[string]
	linkChanges atomic.Uint64
	hw          nicstat.Hardware
	closed      atomic.Bool
}

var _ nic.NIC = (*Device)(nil)
var _ nic.MulticastFilter = (*Device)(nil)
var _ nic.Tuner = (*Device)(nil)

// Probe resets the controller described by dev and brings it up.
func Probe(dev *nic.Device) (nic.NIC, error) { return nic.AsNIC(probe(dev)) }

func probe(dev *nic.Device) (*Device, error) {
	if err := dev.Check("e1000e"); err != nil {
		return nil, err
	}
	id, info, err := Lookup(dev.Func.Vendor, dev.Func.Device)
	if err != nil {
		return nil, fmt.Errorf("%s at %v: %w", dev.Name, dev.Func.Addr, err)
	}
	d := &Device{
		name: dev.Name, id: id, info: info,
		regs: dev.Regs, dma: dev.DMA, clock: dev.Clock, irq: dev.IRQ, logf: dev.Log(),
	}
	if d.irq == nil {
		d.irq = kernel.PollWaiter{}
	}
	d.mtu.Store(defaultMTU)
	d.link.Store(&nic.Link{})
	if err := d.reset(); err != nil {
		return nil, err
	}
	if d.mac, err = d.readMAC(dev.Func.Addr.Fn); err != nil {
		return nil, err
	}
	if err := d.openQueue(); err != nil {
		return nil, err
	}
	d.hw.Init(nicstat.Table())
	q := &d.q
	q.rxMu.Lock()
	q.txMu.Lock()
	d.up()
	q.txMu.Unlock()
	q.rxMu.Unlock()
	d.logf("%s: %s (%s) %04x:%04x mac %x link %v", d.name, id.Name, info.Type, VendorIntel, id.Device, d.mac, *d.link.Load())
	return d, nil
}

// up programs the rings, filters and link and enables RX and TX. The
// queue's rxMu and txMu are held.
func (d *Device) up() {
	r := d.regs
	d.filterMu.Lock()
	d.writeMTALocked()
	d.filterMu.Unlock()
	d.q.setupTx()
	d.q.setupRx()
	ctrl := r.Read32(CTRL)
	ctrl |= CTRL_SLU | CTRL_ASDE
	ctrl &^= CTRL_FRCSPD | CTRL_FRCDPX | CTRL_LRST | CTRL_PHY_RST
	r.Write32(CTRL, ctrl)
	r.Write32(CTRL_EXT, r.Read32(CTRL_EXT)|CTRL_EXT_DRV_LOAD)
	d.enableIRQ()
	d.updateLink()
}

// rctlFor is RCTL for mtu with the current filter modes: the one place
// that decides UPE and MPE. Promiscuous passes every unicast and every
// multicast frame; allmulti only the multicast ones. filterMu is held.
func (d *Device) rctlFor(mtu int) uint32 {
	v := d.rctl
	if mtu > defaultMTU {
		v |= RCTL_LPE
	}
	if d.mc.all || d.mc.promisc {
		v |= RCTL_MPE
	}
	if d.mc.promisc {
		v |= RCTL_UPE
	}
	if d.rxStopped {
		v &^= RCTL_EN
	}
	return v
}

// Name implements nic.NIC.
func (d *Device) Name() string { return d.name }

// MAC implements nic.NIC.
func (d *Device) MAC() [6]byte { return d.mac }

// Type is the controller's MAC type.
func (d *Device) Type() MACType { return d.info.Type }

// MTU implements nic.NIC.
func (d *Device) MTU() int { return int(d.mtu.Load()) }

// MaxMTU is the largest MTU a single receive buffer holds.
func (d *Device) MaxMTU() int {
	return min(d.info.MaxFrame-4, rxBufSize) - ethHdrLen - vlanTagLen
}

// SetMTU implements nic.NIC.
func (d *Device) SetMTU(mtu int) error {
	if mtu < 68 || mtu > d.MaxMTU() {
		return fmt.Errorf("e1000e %s: mtu %d outside 68..%d (%s, one %d-byte buffer per frame)", d.name, mtu, d.MaxMTU(), d.info.Type, rxBufSize)
	}
	d.filterMu.Lock()
	defer d.filterMu.Unlock()
	d.mtu.Store(int32(mtu))
	d.regs.Write32(RCTL, d.rctlFor(mtu))
	return nil
}

// Link implements nic.NIC.
func (d *Device) Link() nic.Link { return *d.link.Load() }

// Features implements nic.NIC.
func (d *Device) Features() nic.Features {
	tso := d.tso.Load()
	f := nic.Features{RxChecksum: true, TxChecksum: true, TSOv4: tso, TSOv6: tso}
	if tso {
		f.MaxGSO = maxTSO
	}
	return f
}

// Queues implements nic.NIC: the one queue pair.
func (d *Device) Queues() []nic.Queue { return []nic.Queue{&d.q} }

// Close stops the controller and frees its rings; nothing stays mapped.
func (d *Device) Close() error {
	if d.closed.Swap(true) {
		return nil
	}
	r := d.regs
	r.Write32(IMC, 0xffffffff)
	d.stopRx()
	r.Write32(TCTL, 0)
	r.Write32(CTRL_EXT, r.Read32(CTRL_EXT)&^CTRL_EXT_DRV_LOAD)
	d.clock.Sleep(dmaSettle)
	d.cbMu.Lock() // a measurement under way ends first
	d.cbMu.Unlock()
	if err := d.q.close(); err != nil {
		return fmt.Errorf("e1000e %s: close: %w", d.name, err)
	}
	return nil
}
