package advmac

import (
	"github.com/ether9/ether9/drivers/advregs"
	"github.com/ether9/ether9/drivers/ring"
)

// Thresholds are a queue's prefetch, host and write-back thresholds
// (RXDCTL/TXDCTL PTHRESH, HTHRESH, WTHRESH).
type Thresholds struct{ P, H, W uint32 }

func (t Thresholds) xdctl() uint32 {
	return t.P<<advregs.XDCTL_PTHRESH_SHIFT | t.H<<advregs.XDCTL_HTHRESH_SHIFT | t.W<<advregs.XDCTL_WTHRESH_SHIFT
}

// StartRxQueue points queue n at descs, sets it to one advanced one-buffer
// descriptor per frame of bufSize bytes (a multiple of 1 KiB), dropping
// when no descriptor is free, and enables it. The caller arms buffers and
// writes the tail (SetRxTail).
func (m *MAC) StartRxQueue(n int, descs *ring.Descs, bufSize int, t Thresholds) error {
	r := m.Regs
	descs.Program(r, advregs.QueueReg(advregs.RDBAL, n))
	r.Write32(advregs.QueueReg(advregs.SRRCTL, n), uint32(bufSize/1024)<<advregs.SRRCTL_BSIZEPKT_SHIFT|advregs.SRRCTL_DESCTYPE_ADV_ONEBUF|advregs.SRRCTL_DROP_EN)
	r.Write32(advregs.QueueReg(advregs.RXDCTL, n), t.xdctl())
	return m.SetQueueEnable(advregs.RXDCTL, n, true)
}

// SetRxTail hands the device receive queue n's descriptors up to tail.
func (m *MAC) SetRxTail(n, tail int) {
	m.Regs.Write32(advregs.QueueReg(advregs.RDT, n), uint32(tail))
}

// StartTxQueue points queue n at descs and enables it.
func (m *MAC) StartTxQueue(n int, descs *ring.Descs, t Thresholds) error {
	descs.Program(m.Regs, advregs.QueueReg(advregs.TDBAL, n))
	m.Regs.Write32(advregs.QueueReg(advregs.TXDCTL, n), t.xdctl())
	return m.SetQueueEnable(advregs.TXDCTL, n, true)
}

// PrepareRx clears the multicast table, turns on IP and TCP/UDP checksum
// offload with the RSS hash in the descriptor, and sets the longest frame
// received.
func (m *MAC) PrepareRx(maxFrame int) {
	r := m.Regs
	for i := 0; i < advregs.NumMTA; i++ {
		r.Write32(advregs.MTA+uint32(4*i), 0)
	}
	r.Write32(advregs.RXCSUM, advregs.RXCSUM_IPOFL|advregs.RXCSUM_TUOFL|advregs.RXCSUM_PCSD)
	m.SetMaxFrame(maxFrame)
}

// SetMaxFrame sets RLPML, the longest frame received (with RCTL.LPE).
func (m *MAC) SetMaxFrame(n int) { m.Regs.Write32(advregs.RLPML, uint32(n)) }

// EnableRxTx turns the transmit unit on (padding short frames, full
// duplex collision settings, retransmit on late collision) and the
// receive unit on (broadcasts accepted, CRC stripped, RLPML the length
// limit).
func (m *MAC) EnableRxTx() {
	r := m.Regs
	r.Write32(advregs.TCTL, advregs.TCTL_EN|advregs.TCTL_PSP|advregs.TCTL_CT_DEFAULT<<advregs.TCTL_CT_SHIFT|advregs.TCTL_COLD_FD<<advregs.TCTL_COLD_SHIFT|advregs.TCTL_RTLC)
	r.Write32(advregs.RCTL, advregs.RCTL_EN|advregs.RCTL_BAM|advregs.RCTL_SECRC|advregs.RCTL_LPE)
}

// SetLinkUp lets the MAC follow the PHY's resolved link: SLU on, speed
// and duplex not forced, the PHY out of reset.
func (m *MAC) SetLinkUp() {
	r := m.Regs
	ctrl := r.Read32(advregs.CTRL)
	ctrl |= advregs.CTRL_SLU
	ctrl &^= advregs.CTRL_FRCSPD | advregs.CTRL_FRCDPX | advregs.CTRL_PHY_RST
	r.Write32(advregs.CTRL, ctrl)
}

// SetDriverLoaded tells the firmware whether a driver owns the device
// (CTRL_EXT.DRV_LOAD).
func (m *MAC) SetDriverLoaded(on bool) {
	r := m.Regs
	v := r.Read32(advregs.CTRL_EXT)
	if on {
		v |= advregs.CTRL_EXT_DRV_LOAD
	} else {
		v &^= advregs.CTRL_EXT_DRV_LOAD
	}
	r.Write32(advregs.CTRL_EXT, v)
}

// Stop masks every interrupt and turns the receive and transmit units
// off; the queues are stopped after it.
func (m *MAC) Stop() {
	m.maskAll()
	m.Regs.Write32(advregs.RCTL, 0)
	m.Regs.Write32(advregs.TCTL, 0)
}

// Shutdown stops the device for good: every interrupt masked, the
// receive and transmit units off, queues 0..queues-1 disabled (a queue
// that does not stop is logged), the firmware told the driver is gone,
// and time for DMA in flight to land. The rings can be freed after.
func (m *MAC) Shutdown(queues int) {
	m.Stop()
	for n := 0; n < queues; n++ {
		if err := m.StopQueue(n); err != nil {
			m.logf("%v", err)
		}
	}
	m.SetDriverLoaded(false)
	m.Clock.Sleep(dmaDrain)
}
