// Package mi225 is a model of the Intel Ethernet Controller I225/I226
// (the igc family), written from the I225 datasheet's register, descriptor
// and interrupt descriptions.
//
// It plugs into the simulated machine as a PCI device: its registers are
// BAR0, its MSI-X table BAR3, it reaches memory only through the machine's
// DMA port (every access translated by the simulated VT-d unit), it
// signals on the machine's interrupt line, and it puts frames on a
// simulated wire. The model does what the card does: address and VLAN
// filtering, EtherType and 2-tuple queue filters, RSS, checksum verification, header split, frames spread over
// several buffers, checksum insertion and TCP segmentation, statistics.
// Both the advanced and the legacy descriptor formats are handled.
//
// Interrupts follow GPIE: in MSI-X mode a queue's cause sets the EICR bit
// of the vector IVAR names, with EIAC auto-clear and EIAM auto-mask; in
// MSI and INTx mode ICR.INT_ASSERTED and read-to-clear apply. With MSI-X
// enabled in config space each vector that fires sends its own table
// entry's message, held in the pending bit array while the entry or the
// function is masked (nicmodel.MSIXTable); otherwise the function's one
// line carries it. Vectors are counted as they fire. With Options.DeferRx a received frame waits in its
// queue's line of the packet buffer until that queue's driver thread
// arms its vector or touches its ring registers (see packetBuffer); with
// Options.DeferTx a queue's transmit descriptors wait the same way after
// its TDT write (see nicmodel.TxDefer).
//
// What is not modelled: interrupt moderation (EITR is stored; causes are
// signalled at once), flow control, time stamping and launch time,
// PSRTYPE (every recognised header is split), SCTP checksums, wake-up
// and manageability. Descriptor types other
// than legacy, advanced one-buffer and the two header-split modes drop
// the frame and count it.
package mi225

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
	// Device is the PCI device id; zero means the I225-V (0x15F3).
	Device uint16
	// MAC is the address programmed in the NVM; zero gives
	// 02:00:00:22:50:01. Blank-NVM parts ignore it.
	MAC [6]byte
	// DeferRx keeps each frame from the wire in the receive packet
	// buffer, in its queue's line, until the driver's receive path for
	// that queue next touches the device (its RDH, RDT or RXDCTL, or an
	// EIMS write arming its vector or, outside MSI-X mode, an EIMC write
	// masking it), which writes the queue's frames to
	// its ring on that goroutine (see packetBuffer). Without it a frame
	// is written to its ring on the sender's goroutine as it arrives.
	DeferRx bool
	// RxBufferKiB sizes that packet buffer; 0 means 1024. A deferred
	// frame stands for one the card would already have written to its
	// ring, so the buffer is sized like the rings (four rings of 256 2 KiB
	// buffers hold 2 MiB) rather than like the card's own buffer.
	RxBufferKiB int
	// DeferTx makes a TDT write only record the tail: the queue's
	// descriptors are fetched, their buffers read and sent, DD written
	// back and TDH moved when the driver's transmit path for that queue
	// next touches the device (any access to its TDH, TDT or TXDCTL,
	// before the access, or an EIMS write arming the vector its TX IVAR
	// entry names, after it), TxPerTouch descriptors at a time, on that
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
	RxDescriptors  uint64 // descriptors written back
	RxNoDescriptor uint64 // dropped: too few free descriptors
	RxFiltered     uint64 // dropped by address or VLAN filtering
	RxBadSize      uint64 // dropped as undersized or oversized
	RxOff          uint64 // arrived while the receiver, its queue or the link was off
	RxUnsupported  uint64 // dropped: the queue's descriptor type is not modelled
	RxDMAFaults    uint64 // DMA accesses the IOMMU refused
	nicmodel.TxCounters
	Resets     uint64
	Vectors    [msixVectors]uint64 // MSI-X messages per vector
	Interrupts uint64              // assertions of the line in MSI or INTx mode

	RxQueueFrames [Queues]uint64 // frames written to each queue's ring
}

// NIC is one controller.
type NIC struct {
	opt  Options
	part Part
	mac  [6]byte
	dma  nicmodel.DMA
	irq  nicmodel.Interrupt
	cfg  *sim.ConfigSpace

	// mu guards the register file, the PHY, the NVM, the link and the
	// counters. The engines take it briefly, never across DMA or while a
	// frame is on the wire.
	mu       sync.Mutex
	regs     []uint32
	nvm      []uint16
	phy      phy
	cable    linkState // what the partner offers
	link     linkState // what the MAC sees
	port     wire.Port
	counters Counters
	ringGen  [Queues]uint64 // RX ring set-ups: a frame in flight under an older one is not completed
	bars     nicmodel.BARs
	msix     nicmodel.MSIXTable // in bars; its messages through irq

	rxMu    sync.Mutex // the RX engine and the packet buffer; taken before mu
	rx      rxEngine
	pbq     [Queues]*packetBuffer // with Options.DeferRx: each queue's line
	pbUsed  int                   // bytes waiting in all lines
	pbLimit int                   // the packet buffer's size
	txMu    sync.Mutex            // the TX engine; taken before mu
	tx      txEngine
	txDefer nicmodel.TxDefer // Options.DeferTx
}

type linkState struct {
	up    bool
	speed int
}

// New returns a model with its registers at their power-on values and no
// cable attached.
func New(opt Options, dma nicmodel.DMA, irq nicmodel.Interrupt) (*NIC, error) {
	if opt.Device == 0 {
		opt.Device = 0x15f3
	}
	part, err := PartByID(opt.Device)
	if err != nil {
		return nil, err
	}
	if err := nicmodel.CheckNew("mi225", &opt.MAC, [6]byte{0x02, 0x00, 0x00, 0x22, 0x50, 0x01}, dma, irq); err != nil {
		return nil, err
	}
	txDefer, err := nicmodel.NewTxDefer("mi225", opt.DeferTx, opt.TxPerTouch)
	if err != nil {
		return nil, err
	}
	n := &NIC{opt: opt, part: part, mac: opt.MAC, dma: dma, irq: irq, regs: make([]uint32, regFileSize/4), txDefer: txDefer}
	if part.BlankNVM {
		n.mac = [6]byte{}
	}
	if opt.DeferRx {
		kib := opt.RxBufferKiB
		if kib <= 0 {
			kib = 1024
		}
		n.pbLimit = kib << 10
		for q := range n.pbq {
			n.pbq[q] = nicmodel.NewPacketBuffer[rxAdmit](n.pbLimit)
		}
	}
	n.nvm = buildNVM(part, n.mac)
	n.cable = linkState{speed: part.MaxMbps}
	n.phy.reset(part)
	n.initConfig()
	n.bars = nicmodel.BARs{Regs: barMMIO, IO: nicmodel.NoBAR, MSIX: barMSIX, Size: regFileSize, Read32: n.read32, Write32: n.write32, Table: n.msix}
	n.mu.Lock()
	n.resetLocked()
	n.mu.Unlock()
	return n, nil
}

// Part returns the part this model plays.
func (n *NIC) Part() Part { return n.part }

// MAC returns the address held in the NVM (zero on a blank part).
func (n *NIC) MAC() [6]byte { return n.mac }

// Counters returns the model's own counters.
func (n *NIC) Counters() Counters { return nicmodel.Snapshot(&n.mu, &n.counters) }

// Attach plugs the model into one end of a wire. If the port reports link
// state, the PHY follows it.
func (n *NIC) Attach(p wire.Port) {
	nicmodel.Attach(&n.mu, &n.port, p, n.receive, n.cableChanged, n.part.MaxMbps)
}

// cableChanged follows the wire. A partner faster than this part
// negotiates down to what both do.
func (n *NIC) cableChanged(up bool, mbps int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.cable = linkState{up: up, speed: min(mbps, n.part.MaxMbps)}
	n.linkChangedLocked()
}

// SetLink sets what the cable offers: a partner present, and the fastest
// speed it advertises. The PHY resolves the link from that and its own
// advertisement; a change raises LSC.
func (n *NIC) SetLink(up bool, mbps int) error {
	if !n.part.supports(mbps) {
		return fmt.Errorf("mi225 %s: link speed %d Mb/s not supported", n.part.Name, mbps)
	}
	n.mu.Lock()
	n.cable = linkState{up: up, speed: mbps}
	n.linkChangedLocked()
	n.mu.Unlock()
	return nil
}

// Link reports the link as the MAC sees it.
func (n *NIC) Link() (up bool, mbps int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.link.up, n.link.speed
}

// linkLocked resolves the link: down while the PHY is in reset or powered
// down or the partner is absent; otherwise the best speed both advertise.
func (n *NIC) linkLocked() linkState {
	if !n.cable.up || n.regs[nicmodel.CTRL/4]&nicmodel.CtrlPHYRST != 0 {
		return linkState{}
	}
	s := n.phy.resolve(n.cable.speed)
	if s == 0 {
		return linkState{}
	}
	return linkState{up: true, speed: s}
}

func (n *NIC) linkChangedLocked() {
	now := n.linkLocked()
	if now == n.link {
		return
	}
	n.link = now
	n.phy.setLink(now.up, now.speed)
	n.otherCauseLocked(nicmodel.IntLSC)
}

// resetLocked is the port software reset (CTRL.RST) and the device reset
// (CTRL.DEV_RST): MAC registers to their initial values, the address
// reloaded from the NVM into RAL0/RAH0, statistics cleared. The PHY and
// PCI configuration are not touched.
func (n *NIC) resetLocked() {
	r := n.regs
	nicmodel.ResetRegs(r)
	r[nicmodel.CTRL/4] = ctrlResetVal
	r[nicmodel.STATUS/4] = StatusPFRstDone | StatusLANInit
	eecd := uint32(nicmodel.EecdAutoRd)
	if !n.part.BlankNVM {
		eecd |= nicmodel.EecdPres | EecdFlashDet | EecdSec1Val
	}
	r[nicmodel.EECD/4] = eecd
	r[nicmodel.VET/4] = 0x88a88100
	r[nicmodel.TIPG/4] = 0x0060200a
	r[RLPML/4] = 0x2600
	for q := range Queues {
		r[RxQ(SRRCTL, q)/4] = 2 | 4<<SrrctlBSizeHdrShift // 2 KiB packet, 256 B header, legacy
		n.ringGen[q]++
	}
	if !n.part.BlankNVM {
		nicmodel.LoadRAR0(r, n.mac)
	}
	n.tx.reset()
	for _, pb := range n.pbq {
		if pb != nil {
			pb.Reset()
		}
	}
	n.pbUsed = 0
	n.counters.Resets++
	n.link = linkState{} // the MAC relearns the link: LSC follows if it is up
	n.linkChangedLocked()
}

// Reset performs a device reset, as writing CTRL.DEV_RST does.
func (n *NIC) Reset() {
	defer nicmodel.LockAll(&n.txMu, &n.rxMu, &n.mu)()
	n.resetLocked()
	n.updateAssertLocked(false)
}

// Regs returns BAR0 as a register window, for tests that drive the model
// without a bus.
func (n *NIC) Regs() kernel.Regs { return nicmodel.Window(n.read32, n.write32) }
