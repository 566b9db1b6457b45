// Package m82574 is a model of the Intel 82574L gigabit Ethernet controller
// (the part QEMU's e1000e device emulates), with an I219-LM personality,
// written from the datasheet's register and descriptor descriptions.
//
// It plugs into the simulated machine as a PCI device: its registers are
// BAR0, it reaches memory only through the machine's DMA port (so every
// access is translated by the simulated VT-d unit), it signals through the
// machine's interrupt line, and it puts frames on a simulated wire. It does
// in the model what the hardware does on the card: checksum insertion, TCP
// segmentation, receive filtering, checksum verification and statistics.
//
// What is not modelled: interrupt moderation timers (ITR, RDTR, RADV, TIDV
// and TADV are stored; causes are signalled at once), flow control frames,
// packet split receive, the second queue pair, manageability and wake-up.
package m82574

import (
	"fmt"
	"sync"

	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/nicmodel"
	"github.com/ether9/ether9/kernel/sim/wire"
)

// Options configure a model.
type Options struct {
	// Personality selects the part; the zero value is the 82574L.
	Personality Personality
	// MAC is the address stored in the NVM; zero gives 52:54:00:12:34:56,
	// the address QEMU gives its first NIC.
	MAC [6]byte
	// DeferRx keeps frames from the wire in a receive packet buffer until
	// the driver's receive path next touches the device (reads ICR or RDH,
	// or writes RDT), which writes them to the ring on that goroutine (see
	// packetBuffer). Without it a frame is written to the ring on the
	// sender's goroutine as it arrives.
	DeferRx bool
	// RxBufferKiB sizes that packet buffer; 0 means 256. (The 82574 has
	// 20 KiB by default, but it drains at line rate; this one drains only
	// when the driver looks.)
	RxBufferKiB int
	// DeferTx makes a TDT write only record the tail: the descriptors are
	// fetched, their buffers read and sent, DD written back and TDH moved
	// when the driver next touches the transmit queue (any access to TDH,
	// TDT or TXDCTL) or reads ICR, before the access, TxPerTouch
	// descriptors at a time, on that goroutine (see nicmodel.TxDefer).
	// Without it a TDT write sends everything up to the new tail before
	// it returns.
	DeferTx bool
	// TxPerTouch is the most descriptors one such touch processes; 0
	// means every one handed over before the touch.
	TxPerTouch int
}

// Counters are what the model saw, for tests. The driver-visible
// statistics are the datasheet's registers.
type Counters struct {
	RxFrames       uint64 // frames written to the ring
	RxNoDescriptor uint64 // dropped: too few free descriptors (with DeferRx: packet buffer full)
	RxFiltered     uint64 // dropped by address or VLAN filtering
	RxBadSize      uint64 // dropped as undersized or oversized
	RxOff          uint64 // arrived while the receiver or link was off
	RxDMAFaults    uint64 // DMA writes the IOMMU refused
	nicmodel.TxCounters
	Resets uint64
}

// NIC is one controller.
type NIC struct {
	pers Personality
	mac  [6]byte
	dma  nicmodel.DMA
	irq  nicmodel.Interrupt
	cfg  *sim.ConfigSpace

	// mu guards the register file, the PHY, the NVM, the link and the
	// counters. The RX and TX engines hold it only briefly; they never
	// hold it during DMA or while a frame is on the wire.
	mu    sync.Mutex
	regs  [mmioSize / 4]uint32
	nvm   [nvmWords]uint16
	phy   phy
	cable struct {
		up    bool
		speed int
	}
	linkWas  linkState
	port     wire.Port
	counters Counters
	// rxRingGen counts RX ring set-ups (base, length or head written, or
	// a reset): descriptors prefetched under an older one are dropped.
	rxRingGen uint64
	bars      nicmodel.BARs
	msix      nicmodel.MSIXTable // in bars on a standalone part; its messages through irq

	txMu sync.Mutex // the TX engine; taken before mu
	tx   txEngine
	rxMu sync.Mutex // the RX engine; taken before mu
	rx   rxEngine
	pb   *packetBuffer // with Options.DeferRx

	txDefer nicmodel.TxDefer // Options.DeferTx
}

// New returns a model with its registers at their power-on values and no
// cable attached (link down).
func New(opt Options, dma nicmodel.DMA, irq nicmodel.Interrupt) (*NIC, error) {
	if opt.Personality.Name == "" {
		opt.Personality = M82574L
	}
	if err := nicmodel.CheckNew("m82574", &opt.MAC, [6]byte{0x52, 0x54, 0x00, 0x12, 0x34, 0x56}, dma, irq); err != nil {
		return nil, err
	}
	txDefer, err := nicmodel.NewTxDefer("m82574", opt.DeferTx, opt.TxPerTouch)
	if err != nil {
		return nil, err
	}
	n := &NIC{pers: opt.Personality, mac: opt.MAC, dma: dma, irq: irq, txDefer: txDefer}
	if opt.DeferRx {
		kib := opt.RxBufferKiB
		if kib <= 0 {
			kib = 256
		}
		n.pb = nicmodel.NewPacketBuffer[struct{}](kib << 10)
	}
	n.cable.speed = 1000
	n.loadNVM()
	n.phy.reset(n.pers.PHYID)
	n.initConfig()
	n.bars = nicmodel.BARs{Regs: barMMIO, IO: nicmodel.NoBAR, MSIX: nicmodel.NoBAR, Size: mmioSize, Read32: n.read32, Write32: n.write32}
	if n.pers.Standalone { // the I/O and MSI-X BARs are the standalone part's
		n.bars.IO, n.bars.MSIX, n.bars.Table = barIO, barMSIX, n.msix
	}
	n.mu.Lock()
	n.resetLocked()
	n.mu.Unlock()
	return n, nil
}

// Personality returns the part this model plays.
func (n *NIC) Personality() Personality { return n.pers }

// MAC returns the address held in the NVM.
func (n *NIC) MAC() [6]byte { return n.mac }

// Counters returns the model's own counters.
func (n *NIC) Counters() Counters { return nicmodel.Snapshot(&n.mu, &n.counters) }

// Attach plugs the model into one end of a wire. If the port reports link
// state (wire.LinkPort), the PHY follows it.
func (n *NIC) Attach(p wire.Port) {
	nicmodel.Attach(&n.mu, &n.port, p, n.receive, n.cableChanged, 1000)
}

// cableChanged follows the wire. A partner at a speed this PHY cannot do
// leaves the link down.
func (n *NIC) cableChanged(up bool, mbps int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.pers.supports(mbps) {
		n.cable.speed = mbps
	} else {
		up = false
	}
	n.cable.up = up
	n.linkChangedLocked()
}

// SetLink sets what the cable offers: link partner present, and the speed
// it negotiates. The PHY resolves its own link from that (it may be
// powered down or advertise less), and a change raises LSC.
func (n *NIC) SetLink(up bool, speedMbps int) error {
	if !n.pers.supports(speedMbps) {
		return fmt.Errorf("m82574 %s: link speed %d Mb/s not supported (have %v)", n.pers.Name, speedMbps, n.pers.Speeds)
	}
	n.mu.Lock()
	n.cable.up, n.cable.speed = up, speedMbps
	n.linkChangedLocked()
	n.mu.Unlock()
	return nil
}

type linkState struct {
	up    bool
	speed int
}

// linkLocked resolves the MAC's view of the link from the cable and the
// PHY: down while the PHY is powered down or held in reset; the speed is
// the best both sides advertise.
func (n *NIC) linkLocked() linkState {
	if !n.cable.up || n.regs[nicmodel.CTRL/4]&nicmodel.CtrlPHYRST != 0 || !n.phy.powered() {
		return linkState{}
	}
	return linkState{up: true, speed: n.phy.resolve(n.cable.speed)}
}

func (n *NIC) linkChangedLocked() {
	now := n.linkLocked()
	if now == n.linkWas {
		return
	}
	n.linkWas = now
	n.phy.setLink(now.up, now.speed)
	n.causeLocked(nicmodel.IntLSC)
}

// causeLocked latches interrupt causes and signals the line if any cause
// is enabled.
func (n *NIC) causeLocked(bits uint32) {
	icr := n.regs[nicmodel.ICR/4] | bits
	if icr&n.regs[nicmodel.IMS/4]&intCauses != 0 {
		icr |= nicmodel.IntAsserted
	}
	n.regs[nicmodel.ICR/4] = icr
	n.lineLocked()
}

// lineLocked drives INTx (datasheet 7.4): asserted while a cause enabled
// in IMS is pending in ICR, so it drops when ICR is read (or written) to
// clear the causes or IMC masks them, and rises when IMS enables a cause
// already pending.
func (n *NIC) lineLocked() {
	n.irq.SetLevel(n.regs[nicmodel.ICR/4]&n.regs[nicmodel.IMS/4]&intCauses != 0)
}

// resetLocked is the software reset (CTRL.RST): every MAC register to its
// initial value, the MAC address reloaded from the NVM into RAL0/RAH0, the
// statistics cleared. PCI configuration and the PHY are not touched.
func (n *NIC) resetLocked() {
	r := &n.regs
	nicmodel.ResetRegs(r[:])
	r[nicmodel.CTRL/4] = ctrlResetVal
	r[nicmodel.EECD/4] = nicmodel.EecdPres | nicmodel.EecdAutoRd | 2<<nicmodel.EecdSizeSh
	r[nicmodel.TIPG/4] = 0x00602008
	r[nicmodel.VET/4] = 0x8100
	r[PBA/4] = 0x00140014
	r[TARC0/4] = 0x3
	r[DTXTCPFLGL/4] = 0x0f760ff6
	r[DTXTCPFLGH/4] = 0x00000f7f
	nicmodel.LoadRAR0(r[:], n.mac)
	n.tx = txEngine{TxQueue: n.tx.TxQueue}
	n.tx.Reset()
	n.rx.pending = n.rx.pending[:0]
	n.rxRingGen++
	n.rx.fault = RxFault{}
	if n.pb != nil {
		n.pb.Reset()
	}
	n.counters.Resets++
	n.linkWas = linkState{} // the MAC relearns the link: LSC follows if it is up
	n.linkChangedLocked()
}

// Reset performs a software reset, as writing CTRL.RST does.
func (n *NIC) Reset() {
	defer nicmodel.LockAll(&n.txMu, &n.rxMu, &n.mu)()
	n.resetLocked()
	n.lineLocked()
}

// Regs returns BAR0 as a register window, for tests that drive the model
// without a bus.
func (n *NIC) Regs() kernel.Regs { return nicmodel.Window(n.read32, n.write32) }

func (n *NIC) read32(off uint32) uint32 {
	if off%4 != 0 || off >= mmioSize {
		return 0
	}
	if off == nicmodel.ICR || off == RDH {
		n.drainRx()
	}
	n.txAccess(off, false)
	n.mu.Lock()
	defer n.mu.Unlock()
	v := n.readLocked(off)
	n.lineLocked()
	return v
}

// txAccess runs the transmit engine for an access to off when transmit
// is deferred (Options.DeferTx), before the access takes effect: any
// access to TDH, TDT or TXDCTL, so that a TDT write leaves the
// descriptors it hands over for a later touch and a TDH read returns the
// head the work left, and a read of ICR, which the driver's poll loop
// makes to acknowledge its causes (the TXDW of the work then shows in
// it). Other registers leave the ring alone.
func (n *NIC) txAccess(off uint32, write bool) {
	if n.txDefer.On && (off == TDH || off == TDT || off == TXDCTL || !write && off == nicmodel.ICR) {
		n.kickTx(n.txDefer.PerTouch)
	}
}

func (n *NIC) readLocked(off uint32) uint32 {
	r := &n.regs
	switch {
	case off == CTRLDup:
		return r[nicmodel.CTRL/4]
	case off == nicmodel.STATUS:
		return n.statusLocked()
	case off == nicmodel.ICR:
		return n.readICRLocked()
	case off == nicmodel.ICS, off == nicmodel.IMC:
		return 0 // write-only
	case off == nicmodel.SWSM:
		return nicmodel.ReadSWSM(r[:])
	case off >= statsFirst && off <= statsLast:
		return nicmodel.ReadStat(n.regs[:], off)
	}
	return r[off/4]
}

// readICRLocked implements the read-to-clear of ICR: the causes are cleared
// when the interrupt is asserted or when no cause is enabled; with
// CTRL_EXT.IAME an asserted read also masks the causes in IAM.
func (n *NIC) readICRLocked() uint32 {
	r := &n.regs
	v := r[nicmodel.ICR/4]
	if v&nicmodel.IntAsserted != 0 || r[nicmodel.IMS/4] == 0 {
		if v&nicmodel.IntAsserted != 0 && r[nicmodel.CTRL_EXT/4]&CtrlExtIAME != 0 {
			r[nicmodel.IMS/4] &^= r[nicmodel.IAM/4]
		}
		r[nicmodel.ICR/4] = 0
	}
	return v
}

func (n *NIC) statusLocked() uint32 {
	var s uint32
	if l := n.linkWas; l.up {
		code := nicmodel.SpeedCode(l.speed)
		s |= nicmodel.StatusLU | nicmodel.StatusFD | code<<nicmodel.StatusSpeedSh | code<<StatusASDVSh
	}
	if n.regs[nicmodel.CTRL/4]&nicmodel.CtrlGIOMDis == 0 {
		s |= nicmodel.StatusGIOME
	}
	return s | n.regs[nicmodel.STATUS/4]&nicmodel.StatusPHYRA
}

func (n *NIC) write32(off, v uint32) {
	if off%4 != 0 || off >= mmioSize {
		return
	}
	if off == RDT {
		defer n.drainRx()
	}
	n.txAccess(off, true)
	if (off == nicmodel.CTRL || off == CTRLDup) && v&nicmodel.CtrlRST != 0 {
		n.Reset()
		return
	}
	n.mu.Lock()
	kick := n.writeLocked(off, v)
	n.lineLocked()
	n.mu.Unlock()
	if kick && !n.txDefer.On { // deferred: the tail is only recorded
		n.kickTx(0)
	}
}

// writeLocked stores a register write with its side effects and reports
// whether the TX engine has work to look at.
func (n *NIC) writeLocked(off, v uint32) (kickTx bool) {
	r := &n.regs
	switch {
	case off == nicmodel.CTRL, off == CTRLDup:
		r[nicmodel.CTRL/4] = v &^ ctrlSelfClr
		n.linkChangedLocked()
	case off == nicmodel.STATUS:
		r[nicmodel.STATUS/4] &= v | ^uint32(nicmodel.StatusPHYRA) // PHYRA is cleared by writing 0
	case off == nicmodel.EECD:
		r[nicmodel.EECD/4] = nicmodel.WriteEECD(r[nicmodel.EECD/4], v)
	case off == nicmodel.EERD:
		n.eerdLocked(v)
	case off == nicmodel.CTRL_EXT:
		r[nicmodel.CTRL_EXT/4] = v &^ nicmodel.CtrlExtEERst
	case off == nicmodel.MDIC:
		n.mdicLocked(v)
	case off == nicmodel.ICR:
		r[nicmodel.ICR/4] &^= v
		if r[nicmodel.ICR/4]&intCauses&r[nicmodel.IMS/4] == 0 {
			r[nicmodel.ICR/4] &^= nicmodel.IntAsserted
		}
	case off == nicmodel.ICS:
		n.causeLocked(v & intCauses)
	case off == nicmodel.IMS:
		r[nicmodel.IMS/4] |= v & intCauses
		n.causeLocked(0)
	case off == nicmodel.IMC:
		r[nicmodel.IMS/4] &^= v
	case off == nicmodel.TCTL:
		r[nicmodel.TCTL/4] = v
		return v&nicmodel.TctlEN != 0
	case off == TDT:
		r[TDT/4] = v & 0xffff
		return true
	case off == RDH, off == RDT, off == TDH:
		r[off/4] = v & 0xffff
		if off == RDH {
			n.rxRingGen++
		}
	case off == RDLEN, off == TDLEN:
		r[off/4] = v & 0xfff80
		if off == RDLEN {
			n.rxRingGen++
		}
	case off == RDBAL, off == TDBAL:
		r[off/4] = v &^ 0xf
		if off == RDBAL {
			n.rxRingGen++
		}
	case off == RDBAH:
		r[off/4] = v
		n.rxRingGen++
	case off >= statsFirst && off <= statsLast, off == nicmodel.FWSM:
		// read-only
	default:
		r[off/4] = v
	}
	return false
}
