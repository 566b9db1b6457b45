// Package m82576 is a model of the Intel 82576 gigabit Ethernet controller
// (the part QEMU's igb device emulates), written from the datasheet's
// register and descriptor descriptions.
//
// It plugs into the simulated machine as a PCI device (8086:10c9): its
// registers are BAR0, it reaches memory only through the machine's DMA
// port (so every access is translated by the simulated VT-d unit), it
// signals through the machine's interrupt line, and it puts frames on a
// simulated wire. It does in the model what the hardware does on the
// card: sixteen queue pairs, receive-side scaling with the Toeplitz hash
// and the redirection table, EtherType and 5-tuple queue filters,
// advanced receive descriptors with checksum verification, advanced
// transmit context and data descriptors with checksum insertion and TCP
// segmentation, the receive packet buffer (frames wait there while their
// queue is out of descriptors unless SRRCTL.Drop_En says drop), and the
// statistics registers.
//
// Interrupts follow the datasheet's cause mapping (IVAR, EICR, EIMS,
// EIAC, EIAM, GPIE; see irq.go); with MSI-X enabled each vector sends its
// own table entry's message, with the PCI specification's masking and
// pending bits (nicmodel.MSIXTable).
//
// What is not modelled: interrupt moderation (EITR is stored; causes are
// signalled at once), flow control, header split, VMDq replication and
// the virtual functions, time sync, manageability and wake-up.
package m82576

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/nicmodel"
	"github.com/ether9/ether9/kernel/sim/wire"
)

// Options configure a model.
type Options struct {
	// MAC is the address stored in the NVM; zero gives 52:54:00:12:34:56.
	MAC [6]byte
	// DeferRx keeps every frame from the wire in the receive packet
	// buffer until the driver next touches its queue (reads RDH, RDT or
	// RXDCTL, writes RDT or RXDCTL of that queue, or writes EIMS with
	// the bit the queue's IVAR entry names, arming its interrupt, or
	// outside MSI-X mode EIMC with it, masking it as the woken loop goes
	// to poll), which
	// writes it to the queue's ring on that goroutine. Without it a frame
	// is written on the sender's goroutine as it arrives, and waits only
	// while its queue is out of descriptors.
	DeferRx bool
	// RxBufferKiB sizes the packet buffer; 0 means 64 (the 82576's
	// RXPBS default), or 256 with DeferRx, which drains only when the
	// driver looks.
	RxBufferKiB int
	// DeferTx makes a TDT write only record the tail: the queue's
	// descriptors are fetched, their buffers read and sent, DD (or the
	// head write-back) written and TDH moved when the driver next touches
	// that queue (any access to its TDH, TDT or TXDCTL, before the
	// access, or an EIMS write with the bit the queue's TX IVAR entry
	// names, after it), TxPerTouch descriptors at a time, on that
	// goroutine (see nicmodel.TxDefer). Without it a TDT write sends
	// everything up to the new tail before it returns.
	DeferTx bool
	// TxPerTouch is the most descriptors one such touch processes; 0
	// means every one handed over before the touch.
	TxPerTouch int
}

// Counters are what the model saw, for tests. The driver-visible
// statistics are the datasheet's registers.
type Counters struct {
	RxFrames       uint64 // frames written to a ring
	RxNoDescriptor uint64 // found too few free descriptors on their queue (held or dropped)
	RxMissed       uint64 // dropped: the packet buffer was full
	RxQueueOff     uint64 // dropped: the chosen queue is not enabled
	RxFiltered     uint64 // dropped by address or VLAN filtering
	RxBadSize      uint64 // dropped as undersized or oversized
	RxOff          uint64 // arrived while the receiver or link was off
	RxBadSetup     uint64 // dropped: a descriptor type the model does not do
	RxDMAFaults    uint64 // DMA accesses the IOMMU refused
	nicmodel.TxCounters
	Resets uint64

	RxQueue [numQueues]uint64 // frames written, per queue
	TxQueue [numQueues]uint64 // packets taken, per queue
}

// NIC is one controller.
type NIC struct {
	opt Options
	mac [6]byte
	dma nicmodel.DMA
	irq nicmodel.Interrupt
	cfg *sim.ConfigSpace

	// mu guards the register file, the PHY, the NVM, the link and the
	// counters. The engines hold it only briefly, never during DMA or
	// while a frame is on the wire.
	mu    sync.Mutex
	regs  []uint32 // mmioSize/4
	nvm   [nvmWords]uint16
	phy   phy
	cable struct {
		up    bool
		speed int // Mb/s the partner offers
	}
	linkUp   bool
	speed    int // Mb/s of the link the MAC sees
	port     wire.Port
	counters Counters
	bars     nicmodel.BARs
	msix     nicmodel.MSIXTable      // in bars; its messages through irq
	rssTable *nicmodel.ToeplitzTable // for the key in RSSRK; nil when stale

	txMu  sync.Mutex // the TX engines; taken before rxMu and mu
	tx    [numQueues]txQueue
	rxMu  sync.Mutex // the RX engine; taken before mu
	rx    rxEngine
	rxGen [numQueues]uint64 // each RX ring's set-ups: descriptors prefetched under an older one are stale
	pb    *packetBuffer

	txDefer nicmodel.TxDefer // Options.DeferTx

	// With DeferRx: each queue's waiting frames, in arrival order, and
	// the bytes they hold of the buffer's pbLimit.
	pbq      [numQueues]*packetBuffer
	deferred atomic.Int64
	pbLimit  int64
}

// New returns a model with its registers at their power-on values and no
// cable attached (link down).
func New(opt Options, dma nicmodel.DMA, irq nicmodel.Interrupt) (*NIC, error) {
	if err := nicmodel.CheckNew("m82576", &opt.MAC, [6]byte{0x52, 0x54, 0x00, 0x12, 0x34, 0x56}, dma, irq); err != nil {
		return nil, err
	}
	kib := opt.RxBufferKiB
	switch {
	case kib < 0:
		return nil, fmt.Errorf("m82576: packet buffer of %d KiB", kib)
	case kib == 0 && opt.DeferRx:
		kib = 256
	case kib == 0:
		kib = 64
	}
	txDefer, err := nicmodel.NewTxDefer("m82576", opt.DeferTx, opt.TxPerTouch)
	if err != nil {
		return nil, err
	}
	n := &NIC{opt: opt, mac: opt.MAC, dma: dma, irq: irq, regs: make([]uint32, mmioSize/4), pb: nicmodel.NewPacketBuffer[rxSetup](kib << 10), txDefer: txDefer}
	n.pbLimit = int64(kib << 10)
	if opt.DeferRx {
		for q := range n.pbq {
			n.pbq[q] = nicmodel.NewPacketBuffer[rxSetup](kib << 10)
		}
	}
	n.loadNVM()
	n.phy.reset()
	n.initConfig()
	n.bars = nicmodel.BARs{Regs: barMMIO, IO: barIO, MSIX: barMSIX, Size: mmioSize, Read32: n.read32, Write32: n.write32, Table: n.msix}
	n.mu.Lock()
	n.resetLocked()
	n.mu.Unlock()
	return n, nil
}

// MAC returns the address held in the NVM.
func (n *NIC) MAC() [6]byte { return n.mac }

// Counters returns the model's own counters.
func (n *NIC) Counters() Counters { return nicmodel.Snapshot(&n.mu, &n.counters) }

// Attach plugs the model into one end of a wire. If the port reports link
// state (wire.LinkPort), the PHY follows it; otherwise the cable is in at
// 1000 Mb/s.
func (n *NIC) Attach(p wire.Port) { nicmodel.Attach(&n.mu, &n.port, p, n.receive, n.setCable, 1000) }

// SetLink sets what the cable offers: a link partner present, and the
// speed it can do. The PHY links at the best speed both sides do (a
// 2.5 Gb/s partner links at 1000 Mb/s); a change the MAC sees raises LSC.
func (n *NIC) SetLink(up bool, speedMbps int) error {
	switch speedMbps {
	case 10, 100, 1000, 2500:
	default:
		return fmt.Errorf("m82576: link speed %d Mb/s: want 10, 100, 1000 or 2500", speedMbps)
	}
	n.setCable(up, speedMbps)
	return nil
}

func (n *NIC) setCable(up bool, mbps int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.cable.up, n.cable.speed = up, min(mbps, 1000)
	n.linkChangedLocked()
}

// linkLocked is the MAC's view of the link: the cable is in, software has
// set CTRL.SLU, and the PHY is neither in reset nor powered down.
func (n *NIC) linkLocked() bool {
	return n.cable.up && n.regs[nicmodel.CTRL/4]&nicmodel.CtrlSLU != 0 &&
		n.regs[nicmodel.CTRL/4]&nicmodel.CtrlPHYRST == 0 && n.phy.powered()
}

func (n *NIC) linkChangedLocked() {
	now := n.linkLocked()
	speed := 0
	if now {
		speed = n.cable.speed
	}
	if now == n.linkUp && speed == n.speed {
		return
	}
	n.linkUp, n.speed = now, speed
	n.phy.setLink(now, speed)
	n.otherCauseLocked(nicmodel.IntLSC)
}

// Reset performs a software reset, as writing CTRL.RST does.
func (n *NIC) Reset() {
	defer nicmodel.LockAll(&n.txMu, &n.rxMu, &n.mu)()
	n.resetLocked()
	n.lineLocked()
}

// resetLocked is the software reset: every MAC register to its initial
// value, the MAC address reloaded from the NVM into RAL0/RAH0, statistics
// cleared, queue 0 enabled as after power-on. PCI configuration and the
// PHY are not touched.
func (n *NIC) resetLocked() {
	r := n.regs
	nicmodel.ResetRegs(r)
	r[nicmodel.CTRL/4] = ctrlResetVal
	r[nicmodel.EECD/4] = nicmodel.EecdPres | nicmodel.EecdAutoRd | 2<<nicmodel.EecdSizeSh
	r[nicmodel.VET/4] = 0x8100
	r[nicmodel.TIPG/4] = 0x00a00008
	r[RLPML/4] = 0x2600
	for q := range uint32(numQueues) {
		r[(SRRCTL+q*queueSize)/4] = 2 | 4<<SrrctlBSizeHdrSh
	}
	r[RXDCTL/4] = RxdctlEnable | 1<<16
	r[TXDCTL/4] = TxdctlEnable
	nicmodel.LoadRAR0(r, n.mac)
	for q := range n.tx {
		n.tx[q].reset()
	}
	n.pb.Reset()
	for _, pb := range n.pbq {
		if pb != nil {
			pb.Reset()
		}
	}
	n.deferred.Store(0)
	for q := range n.rxGen {
		n.rxGen[q]++
	}
	n.rssTable = nil
	n.counters.Resets++
	n.linkUp, n.speed = false, 0 // the MAC relearns the link: LSC follows if it is up
	n.linkChangedLocked()
}

// Regs returns BAR0 as a register window, for tests that drive the model
// without a bus.
func (n *NIC) Regs() kernel.Regs { return nicmodel.Window(n.read32, n.write32) }

// canonical folds the aliases onto one offset: queues 0-3 also answer at
// 0x2800 (RX) and 0x3800 (TX), 0x100 apart, and the interrupt registers
// at 0x1500.
func canonical(off uint32) uint32 {
	switch {
	case off >= 0x2800 && off < 0x2c00 && off&0xff < queueSize:
		return RDBAL + (off-0x2800)>>8*queueSize + off&0x3f
	case off >= 0x3800 && off < 0x3c00 && off&0xff < queueSize:
		return TDBAL + (off-0x3800)>>8*queueSize + off&0x3f
	case off >= ICRAlias && off <= IAMAlias:
		return nicmodel.ICR + (off-ICRAlias)*2
	}
	return off
}

// queueReg splits an offset in a queue block into the queue and the
// register's offset for queue 0.
func queueReg(off, base uint32) (q, reg uint32, ok bool) {
	if off < base || off >= base+numQueues*queueSize {
		return 0, 0, false
	}
	return (off - base) / queueSize, base + (off-base)%queueSize, true
}

func (n *NIC) read32(off uint32) uint32 {
	if off%4 != 0 || off >= mmioSize {
		return 0
	}
	off = canonical(off)
	n.rxAccess(off, false)
	n.txAccess(off)
	n.mu.Lock()
	defer n.mu.Unlock()
	v := n.readLocked(off)
	n.lineLocked()
	return v
}

func (n *NIC) readLocked(off uint32) uint32 {
	r := n.regs
	switch {
	case off == nicmodel.STATUS:
		return n.statusLocked()
	case off == nicmodel.ICR:
		return n.readICRLocked()
	case off == nicmodel.EICR:
		v := r[nicmodel.EICR/4]
		r[nicmodel.EICR/4] = 0
		return v
	case off == nicmodel.ICS, off == nicmodel.IMC, off == nicmodel.EICS, off == nicmodel.EIMC:
		return 0 // write-only
	case off == nicmodel.SWSM:
		return nicmodel.ReadSWSM(r)
	case off >= statsFirst && off <= statsLast:
		return nicmodel.ReadStat(n.regs[:], off)
	case off >= PQGPRC && off < PQGPRC+numQueues*0x100:
		switch (off - PQGPRC) % 0x100 {
		case 0, PQGPTC - PQGPRC, PQGORC - PQGPRC, PQGOTC - PQGPRC:
			v := r[off/4]
			r[off/4] = 0
			return v
		}
	}
	if _, reg, ok := queueReg(off, RDBAL); ok && reg == RQDPC {
		v := r[off/4]
		r[off/4] = 0
		return v
	}
	return r[off/4]
}

func (n *NIC) statusLocked() uint32 {
	s := uint32(StatusPFRstDone)
	if n.linkUp {
		s |= nicmodel.StatusLU | nicmodel.StatusFD | nicmodel.SpeedCode(n.speed)<<nicmodel.StatusSpeedSh
	}
	if n.regs[nicmodel.CTRL/4]&nicmodel.CtrlGIOMDis == 0 {
		s |= nicmodel.StatusGIOME
	}
	return s
}

func (n *NIC) write32(off, v uint32) {
	if off%4 != 0 || off >= mmioSize {
		return
	}
	off = canonical(off)
	defer n.rxAccess(off, true) // after the write: a new RDT may make room
	n.txAccess(off)             // before it: a new TDT is only recorded
	if off == nicmodel.CTRL && v&(nicmodel.CtrlRST|CtrlDevRST) != 0 {
		n.Reset()
		return
	}
	n.mu.Lock()
	kick, q := n.writeLocked(off, v)
	n.lineLocked()
	var armed, txArmed uint32
	if (off == nicmodel.EIMS || off == nicmodel.EIMC && !n.msixLocked()) && n.opt.DeferRx {
		armed = n.queuesOnLocked(v, false)
	}
	if off == nicmodel.EIMS && n.txDefer.On {
		txArmed = n.queuesOnLocked(v, true)
	}
	n.mu.Unlock()
	if kick && !n.txDefer.On {
		n.kickTx(q, 0)
	}
	// With DeferRx, arming a queue's vector is when its waiting frames
	// land: the driver's idle poll loop writes EIMS on its own goroutine
	// just before it sleeps. Outside MSI-X mode so is masking it: the
	// loop the line woke, or the one that took the line and wakes it,
	// writes EIMC before the woken loop polls its ring. With DeferTx the re-arm also lets the engine
	// go on with the queue's transmit descriptors, whose completion fires
	// the vector: a driver that polls its descriptors in memory for DD
	// would otherwise wait for its next send.
	for q := range uint32(numQueues) {
		if armed&(1<<q) != 0 {
			n.drainQueue(q, off == nicmodel.EIMC)
		}
		if txArmed&(1<<q) != 0 {
			n.kickTx(q, n.txDefer.PerTouch)
		}
	}
}

// writeLocked stores a register write with its side effects and reports
// whether TX queue q has work to look at.
func (n *NIC) writeLocked(off, v uint32) (kickTx bool, q uint32) {
	r := n.regs
	if q, reg, ok := queueReg(off, TDBAL); ok {
		switch reg {
		case TDT:
			r[off/4] = v & 0xffff
			return true, q
		case TDH:
			r[off/4] = v & 0xffff
		case TDLEN:
			r[off/4] = v & 0xfff80
		case TDBAL:
			r[off/4] = v &^ 0x7f
		case TXDCTL:
			r[off/4] = v
			return v&TxdctlEnable != 0, q
		default:
			r[off/4] = v
		}
		return false, 0
	}
	if q, reg, ok := queueReg(off, RDBAL); ok {
		switch reg {
		case RDBAL, RDBAH, RDLEN, RDH, RXDCTL:
			n.rxGen[q]++ // the ring set up again: its prefetched descriptors go
		}
		switch reg {
		case RDH, RDT:
			r[off/4] = v & 0xffff
		case RDLEN:
			r[off/4] = v & 0xfff80
		case RDBAL:
			r[off/4] = v &^ 0x7f
		case RQDPC:
			// read-only
		default:
			r[off/4] = v
		}
		return false, 0
	}
	switch {
	case off == nicmodel.CTRL:
		r[nicmodel.CTRL/4] = v
		n.linkChangedLocked()
	case off == nicmodel.STATUS, off == nicmodel.FWSM:
		// read-only
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
		n.assertLocked()
	case off == nicmodel.ICS:
		n.otherCauseLocked(v & intCauses)
	case off == nicmodel.IMS:
		n.setIMSLocked(v)
	case off == nicmodel.IMC:
		r[nicmodel.IMS/4] &^= v
	case off == nicmodel.EICR:
		r[nicmodel.EICR/4] &^= v
	case off == nicmodel.EICS:
		r[nicmodel.EICR/4] |= v
		n.assertLocked()
	case off == nicmodel.EIMS:
		r[nicmodel.EIMS/4] |= v
		n.assertLocked()
	case off == nicmodel.EIMC:
		r[nicmodel.EIMS/4] &^= v
	case off == nicmodel.TCTL:
		r[nicmodel.TCTL/4] = v
		if v&nicmodel.TctlEN != 0 {
			return true, allQueues
		}
	case off >= statsFirst && off <= statsLast, off >= PQGPRC && off < PQGPRC+numQueues*0x100:
		// read-only
	case off >= nicmodel.RSSRK && off < nicmodel.RSSRK+40:
		r[off/4] = v
		n.rssTable = nil
	default:
		r[off/4] = v
	}
	return false, 0
}

// allQueues asks kickTx to look at every queue.
const allQueues = ^uint32(0)
