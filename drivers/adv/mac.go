package adv

// The MAC handling, step for step as both datasheets give it. Each
// driver calls these in its own order and keeps what its part does
// differently.

import (
	"errors"
	"fmt"
	"time"

	"github.com/ether9/ether9/kernel"
)

// Timing (82576 and I225 datasheets, 4.3): registers are usable about
// 1 ms after a reset, the NVM auto-read finishes within 10 ms. The wait
// for EECD.AUTO_RD is those 10 ms, as Linux's igb and igc wait, not
// more: a part that has not finished by then is logged and used, and
// QEMU's 82576 never sets the bit, so every QEMU boot waits it out.
const (
	PollStep        = 50 * time.Microsecond
	ResetSettle     = time.Millisecond
	masterTimeout   = 10 * time.Millisecond
	resetTimeout    = 100 * time.Millisecond
	autoReadTimeout = 10 * time.Millisecond
	nvmTimeout      = 10 * time.Millisecond
	mdicTimeout     = 10 * time.Millisecond
	queueTimeout    = 10 * time.Millisecond
	dmaDrain        = 10 * time.Millisecond
)

// MAC is one controller's register window and clock, with the names its
// errors and log lines carry.
type MAC struct {
	Regs   kernel.Regs
	Clock  kernel.Clock
	Driver string // "igb", "igc"
	Name   string // the interface
	Logf   func(string, ...any)
	// Causes are where the part decodes ICR, IMS and IMC; zero means
	// the 0x01500 block.
	Causes CauseRegs
}

func (m *MAC) errorf(format string, a ...any) error {
	return fmt.Errorf("%s %s: %s", m.Driver, m.Name, fmt.Sprintf(format, a...))
}

func (m *MAC) logf(format string, a ...any) {
	if m.Logf != nil {
		m.Logf(format, a...)
	}
}

// WaitFor polls cond every PollStep of clock time until it holds or
// timeout passes.
func (m *MAC) WaitFor(timeout time.Duration, cond func() bool) bool {
	deadline := m.Clock.Now() + timeout
	for !cond() {
		if m.Clock.Now() >= deadline {
			return cond()
		}
		m.Clock.Sleep(PollStep)
	}
	return true
}

// Reset quiesces DMA and resets the MAC: it masks interrupts, stops RX
// and TX, waits for outstanding master requests, then sets rst in CTRL
// (CTRL_RST, or a part's whole-device reset) and waits for it to clear
// and, if autoRead, for the NVM auto-read. rstName names the bit in the
// error.
//
// A unit that ran gets dmaDrain for its descriptor DMA in flight to land
// once stopped; one found off (firmware without a network boot never
// starts one) has nothing in flight, and the master handshake is wait
// enough, so a probe does not sleep 10 ms for nothing.
func (m *MAC) Reset(rst uint32, rstName string, autoRead bool) error {
	r := m.Regs
	if v := r.Read32(STATUS); v == 0xffffffff {
		return m.errorf("STATUS reads all ones: device not responding")
	}
	ran := r.Read32(RCTL)&RCTL_EN != 0 || r.Read32(TCTL)&TCTL_EN != 0
	m.maskAll()
	r.Write32(RCTL, 0)
	r.Write32(TCTL, TCTL_PSP)
	r.Read32(STATUS)
	if ran {
		m.Clock.Sleep(dmaDrain)
	}

	r.Write32(CTRL, r.Read32(CTRL)|CTRL_GIO_MASTER)
	if !m.WaitFor(masterTimeout, func() bool { return r.Read32(STATUS)&STATUS_GIO_MASTER == 0 }) {
		m.logf("%s: GIO master requests still pending at reset", m.Name)
	}
	r.Write32(CTRL, r.Read32(CTRL)|rst)
	m.Clock.Sleep(ResetSettle)
	if !m.WaitFor(resetTimeout, func() bool { return r.Read32(CTRL)&rst == 0 }) {
		return m.errorf("CTRL.%s did not clear within %v", rstName, resetTimeout)
	}
	if autoRead && !m.WaitFor(autoReadTimeout, func() bool { return r.Read32(EECD)&EECD_AUTO_RD != 0 }) {
		m.logf("%s: NVM auto-read not done after reset", m.Name)
	}
	m.maskAll()
	r.Read32(m.causes().ICR)
	return nil
}

func (m *MAC) maskAll() {
	m.Regs.Write32(m.causes().IMC, 0xffffffff)
	m.Regs.Write32(EIMC, 0xffffffff)
}

// ReadNVM reads one 16-bit NVM word through the EERD register at eerd.
func (m *MAC) ReadNVM(eerd uint32, word int) (uint16, error) {
	r := m.Regs
	r.Write32(eerd, uint32(word)<<EERD_ADDR_SHIFT|EERD_START)
	var v uint32
	if !m.WaitFor(nvmTimeout, func() bool { v = r.Read32(eerd); return v&EERD_DONE != 0 }) {
		return 0, m.errorf("NVM word %d: EERD not done", word)
	}
	return uint16(v >> EERD_DATA_SHIFT), nil
}

// ReadNVMMAC reads the station address from the three NVM words at base.
func (m *MAC) ReadNVMMAC(eerd uint32, base int) ([6]byte, error) {
	var a [6]byte
	for w := 0; w < 3; w++ {
		v, err := m.ReadNVM(eerd, base+w)
		if err != nil {
			return a, err
		}
		a[2*w], a[2*w+1] = byte(v), byte(v>>8)
	}
	return a, nil
}

// ValidMAC reports whether a is a unicast address other than zero.
func ValidMAC(a [6]byte) bool { return a[0]&1 == 0 && a != [6]byte{} }

// StationAddress is the address in RAL0/RAH0 and whether the hardware
// marked it valid (RAH.AV) and it is a usable unicast address; lo and hi
// are the raw registers, for errors.
func (m *MAC) StationAddress() (a [6]byte, ok bool, lo, hi uint32) {
	lo, hi = m.Regs.Read32(RAL0), m.Regs.Read32(RAH0)
	a = [6]byte{byte(lo), byte(lo >> 8), byte(lo >> 16), byte(lo >> 24), byte(hi), byte(hi >> 8)}
	return a, hi&RAH_AV != 0 && ValidMAC(a), lo, hi
}

// SetStationAddress programs a into RAL0/RAH0 as valid.
func (m *MAC) SetStationAddress(a [6]byte) {
	m.Regs.Write32(RAL0, uint32(a[0])|uint32(a[1])<<8|uint32(a[2])<<16|uint32(a[3])<<24)
	m.Regs.Write32(RAH0, uint32(a[4])|uint32(a[5])<<8|RAH_AV)
}

// MDIC runs one access to the internal PHY's register reg (op is
// MDIC_OP_READ or MDIC_OP_WRITE, v the data of a write) and returns the
// data of a read.
func (m *MAC) MDIC(op uint32, reg int, v uint16) (uint16, error) {
	r := m.Regs
	r.Write32(MDIC, op|uint32(reg)<<MDIC_REG_SHIFT|PHYAddrInternal<<MDIC_PHY_SHIFT|uint32(v))
	var s uint32
	if !m.WaitFor(mdicTimeout, func() bool { s = r.Read32(MDIC); return s&(MDIC_READY|MDIC_ERROR) != 0 }) {
		return 0, m.errorf("PHY register %d: MDIC not ready", reg)
	}
	if s&MDIC_ERROR != 0 {
		return 0, m.errorf("PHY register %d: MDIC error", reg)
	}
	return uint16(s & MDIC_DATA_MASK), nil
}

// PHYWrite writes the internal PHY's register reg.
func (m *MAC) PHYWrite(reg int, v uint16) error {
	_, err := m.MDIC(MDIC_OP_WRITE, reg, v)
	return err
}

// PHYRead reads the internal PHY's register reg.
func (m *MAC) PHYRead(reg int) (uint16, error) {
	return m.MDIC(MDIC_OP_READ, reg, 0)
}

// SetQueueEnable sets or clears ENABLE in queue n's RXDCTL or TXDCTL
// (reg) and waits until the device reports the new state.
func (m *MAC) SetQueueEnable(reg uint32, n int, on bool) error {
	r := m.Regs
	off := QueueReg(reg, n)
	v := r.Read32(off)
	if on {
		v |= XDCTL_ENABLE
	} else {
		v &^= XDCTL_ENABLE
	}
	r.Write32(off, v)
	if !m.WaitFor(queueTimeout, func() bool { return (r.Read32(off)&XDCTL_ENABLE != 0) == on }) {
		return m.errorf("queue %d: %#x.ENABLE did not become %v", n, off, on)
	}
	return nil
}

// StopQueue clears ENABLE of queue n's RX and TX sides; errors are
// joined, both sides are tried.
func (m *MAC) StopQueue(n int) error {
	return errors.Join(m.SetQueueEnable(RXDCTL, n, false), m.SetQueueEnable(TXDCTL, n, false))
}
