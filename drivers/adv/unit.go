package adv

import "github.com/ether9/ether9/drivers/ring"

// Thresholds are a queue's prefetch, host and write-back thresholds
// (RXDCTL/TXDCTL PTHRESH, HTHRESH, WTHRESH).
type Thresholds struct{ P, H, W uint32 }

func (t Thresholds) xdctl() uint32 {
	return t.P<<XDCTL_PTHRESH_SHIFT | t.H<<XDCTL_HTHRESH_SHIFT | t.W<<XDCTL_WTHRESH_SHIFT
}

// StartRxQueue points queue n at descs, sets it to one advanced one-buffer
// descriptor per frame of bufSize bytes (a multiple of 1 KiB), dropping
// when no descriptor is free, and enables it. The caller arms buffers and
// writes the tail (SetRxTail).
func (m *MAC) StartRxQueue(n int, descs *ring.Descs, bufSize int, t Thresholds) error {
	r := m.Regs
	descs.Program(r, QueueReg(RDBAL, n))
	r.Write32(QueueReg(SRRCTL, n), uint32(bufSize/1024)<<SRRCTL_BSIZEPKT_SHIFT|SRRCTL_DESCTYPE_ADV_ONEBUF|SRRCTL_DROP_EN)
	r.Write32(QueueReg(RXDCTL, n), t.xdctl())
	return m.SetQueueEnable(RXDCTL, n, true)
}

// SetRxTail hands the device receive queue n's descriptors up to tail.
func (m *MAC) SetRxTail(n, tail int) {
	m.Regs.Write32(QueueReg(RDT, n), uint32(tail))
}

// StartTxQueue points queue n at descs and enables it.
func (m *MAC) StartTxQueue(n int, descs *ring.Descs, t Thresholds) error {
	descs.Program(m.Regs, QueueReg(TDBAL, n))
	m.Regs.Write32(QueueReg(TXDCTL, n), t.xdctl())
	return m.SetQueueEnable(TXDCTL, n, true)
}

// PrepareRx clears the multicast table, turns on IP and TCP/UDP checksum
// offload with the RSS hash in the descriptor, and sets the longest frame
// received.
func (m *MAC) PrepareRx(maxFrame int) {
	r := m.Regs
	for i := 0; i < NumMTA; i++ {
		r.Write32(MTA+uint32(4*i), 0)
	}
	r.Write32(RXCSUM, RXCSUM_IPOFL|RXCSUM_TUOFL|RXCSUM_PCSD)
	m.SetMaxFrame(maxFrame)
}

// SetMaxFrame sets RLPML, the longest frame received (with RCTL.LPE).
func (m *MAC) SetMaxFrame(n int) { m.Regs.Write32(RLPML, uint32(n)) }

// EnableRxTx turns the transmit unit on (padding short frames, full
// duplex collision settings, retransmit on late collision) and the
// receive unit on (broadcasts accepted, CRC stripped, RLPML the length
// limit).
func (m *MAC) EnableRxTx() {
	r := m.Regs
	r.Write32(TCTL, TCTL_EN|TCTL_PSP|TCTL_CT_DEFAULT<<TCTL_CT_SHIFT|TCTL_COLD_FD<<TCTL_COLD_SHIFT|TCTL_RTLC)
	r.Write32(RCTL, RCTL_EN|RCTL_BAM|RCTL_SECRC|RCTL_LPE)
}

// SetLinkUp lets the MAC follow the PHY's resolved link: SLU on, speed
// and duplex not forced, the PHY out of reset.
func (m *MAC) SetLinkUp() {
	r := m.Regs
	ctrl := r.Read32(CTRL)
	ctrl |= CTRL_SLU
	ctrl &^= CTRL_FRCSPD | CTRL_FRCDPX | CTRL_PHY_RST
	r.Write32(CTRL, ctrl)
}

// SetDriverLoaded tells the firmware whether a driver owns the device
// (CTRL_EXT.DRV_LOAD).
func (m *MAC) SetDriverLoaded(on bool) {
	r := m.Regs
	v := r.Read32(CTRL_EXT)
	if on {
		v |= CTRL_EXT_DRV_LOAD
	} else {
		v &^= CTRL_EXT_DRV_LOAD
	}
	r.Write32(CTRL_EXT, v)
}

// Stop masks every interrupt and turns the receive and transmit units
// off; the queues are stopped after it.
func (m *MAC) Stop() {
	m.maskAll()
	m.Regs.Write32(RCTL, 0)
	m.Regs.Write32(TCTL, 0)
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
