package adv

import (
	"strings"
	"testing"
	"time"

	"github.com/ether9/ether9/drivers/internal/fakedev"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/kernel/sim"
)

// device plays the parts of the MAC these steps rely on: CTRL's reset bit
// clears itself, a queue's ENABLE follows the write unless stuck, MDIC
// answers reads of PHY register 0 with phy and refuses register 31.
type device struct {
	stuck bool   // queue enables never take
	phy   uint16 // PHY register 0
}

func (dv *device) write(r map[uint32]uint32, off, v uint32) {
	switch {
	case off == CTRL:
		v &^= CTRL_RST
	case off == QueueReg(RXDCTL, 1) && dv.stuck:
		v &^= XDCTL_ENABLE
	case off == MDIC:
		reg := v >> MDIC_REG_SHIFT & 0x1f
		switch {
		case reg == 31:
			v |= MDIC_ERROR
		case v&MDIC_OP_READ != 0:
			v = v&^MDIC_DATA_MASK | uint32(dv.phy) | MDIC_READY
		default:
			dv.phy = uint16(v)
			v |= MDIC_READY
		}
	}
	r[off] = v
}

func newMAC(dv *device, init map[uint32]uint32) (*MAC, *fakedev.File) {
	f := fakedev.NewFile(init, fakedev.Effects{Write: dv.write})
	return &MAC{Regs: f, Clock: sim.NewClock(), Driver: "igx", Name: "eth9"}, f
}

func TestReset(t *testing.T) {
	m, f := newMAC(&device{}, map[uint32]uint32{EECD: EECD_AUTO_RD, RCTL: RCTL_EN})
	if err := m.Reset(CTRL_RST, "RST", true); err != nil {
		t.Fatal(err)
	}
	if f.Writes(CTRL) != 2 || f.Get(CTRL)&CTRL_GIO_MASTER == 0 {
		t.Errorf("CTRL written %d times, now %#x: want master disable, then reset", f.Writes(CTRL), f.Get(CTRL))
	}
	f.Check(t, map[uint32]uint32{RCTL: 0, TCTL: TCTL_PSP, IMC: 0xffffffff, EIMC: 0xffffffff})

	// Only a unit that ran has DMA in flight to wait for.
	for _, c := range []struct {
		name  string
		init  map[uint32]uint32
		drain bool
	}{
		{"both off", nil, false},
		{"receiving", map[uint32]uint32{RCTL: RCTL_EN}, true},
		{"transmitting", map[uint32]uint32{TCTL: TCTL_EN}, true},
	} {
		m, _ := newMAC(&device{}, c.init)
		if err := m.Reset(CTRL_RST, "RST", false); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if took := m.Clock.Now(); (took >= dmaDrain) != c.drain {
			t.Errorf("%s: reset took %v of clock time, want a drain of %v: %v", c.name, took, dmaDrain, c.drain)
		}
	}

	// A reset bit that never clears is an error naming it.
	m, _ = newMAC(&device{}, nil)
	if err := m.Reset(1<<29, "DEV_RST", false); err == nil || !strings.Contains(err.Error(), "igx eth9: CTRL.DEV_RST did not clear") {
		t.Errorf("stuck reset: %v", err)
	}
	// A device reading all ones is not there.
	m, _ = newMAC(&device{}, map[uint32]uint32{STATUS: 0xffffffff})
	if err := m.Reset(CTRL_RST, "RST", true); err == nil {
		t.Error("reset of an absent device succeeded")
	}
}

func TestQueueEnable(t *testing.T) {
	m, f := newMAC(&device{stuck: true}, nil)
	if err := m.SetQueueEnable(RXDCTL, 0, true); err != nil || f.Get(RXDCTL)&XDCTL_ENABLE == 0 {
		t.Fatalf("enable queue 0: %v, RXDCTL %#x", err, f.Get(RXDCTL))
	}
	start := m.Clock.Now()
	if err := m.SetQueueEnable(RXDCTL, 1, true); err == nil {
		t.Fatal("a queue that never enables reported enabled")
	}
	if waited := m.Clock.Now() - start; waited < queueTimeout {
		t.Errorf("gave up after %v, want at least %v", waited, queueTimeout)
	}
	if err := m.StopQueue(0); err != nil || f.Get(RXDCTL)&XDCTL_ENABLE != 0 {
		t.Errorf("stop queue 0: %v, RXDCTL %#x", err, f.Get(RXDCTL))
	}
}

func TestMDIC(t *testing.T) {
	dv := &device{phy: 0x1140}
	m, _ := newMAC(dv, nil)
	if v, err := m.PHYRead(PHY_BMCR); err != nil || v != 0x1140 {
		t.Fatalf("read BMCR: %#x, %v", v, err)
	}
	if err := m.PHYWrite(PHY_BMCR, 0x1340); err != nil || dv.phy != 0x1340 {
		t.Fatalf("write BMCR: %v, PHY holds %#x", err, dv.phy)
	}
	if _, err := m.PHYRead(31); err == nil || !strings.Contains(err.Error(), "MDIC error") {
		t.Errorf("refused access: %v", err)
	}
}

func TestStationAddress(t *testing.T) {
	mac := [6]byte{0x00, 0x1b, 0x21, 0x0a, 0x0b, 0x0c}
	ral, rah := fakedev.ReceiveAddress(mac)
	m, _ := newMAC(&device{}, map[uint32]uint32{RAL0: ral, RAH0: rah})
	if a, ok, _, _ := m.StationAddress(); !ok || a != mac {
		t.Fatalf("station address %x valid %v, want %x", a, ok, mac)
	}
	m, f := newMAC(&device{}, map[uint32]uint32{RAL0: ral, RAH0: rah &^ RAH_AV})
	if _, ok, _, _ := m.StationAddress(); ok {
		t.Error("address without RAH.AV taken as valid")
	}
	m.SetStationAddress(mac)
	f.Check(t, map[uint32]uint32{RAL0: ral, RAH0: rah})
	for _, a := range [][6]byte{{}, {0x01, 0, 0x5e, 0, 0, 1}, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff}} {
		if ValidMAC(a) {
			t.Errorf("%x taken as a station address", a)
		}
	}
}

func TestRouteQueues(t *testing.T) {
	m, f := newMAC(&device{}, nil)
	// Two queues a register, RX in the low byte of each half.
	slot := func(q int, tx bool) (uint32, uint) {
		shift := uint(q&1) << 4
		if tx {
			shift += 8
		}
		return IVAR0 + 4*uint32(q>>1), shift
	}
	m.RouteQueues(3, slot)
	v := uint32(IVAR_VALID)
	f.Check(t, map[uint32]uint32{
		IVAR0:     v | v<<8 | (v|1)<<16 | (v|1)<<24,
		IVAR0 + 4: (v | 2) | (v|2)<<8,
	})
	if b := QueueBits(3); len(b) != 3 || b[0] != 1 || b[2] != 4 {
		t.Errorf("queue bits %v", b)
	}
}

// Legacy mode: set-up leaves only the link cause and EICR.Other enabled;
// a sleeping queue enables its EICR bit and the queue causes, and they
// are masked again once no queue sleeps; a taken interrupt names the
// queues whose EICR bits are set, and every queue when the part folded
// EICR into the ICR read.
func TestLegacy(t *testing.T) {
	m, f := newMAC(&device{}, nil)
	links := 0
	l := Legacy{M: m, Queue: QueueBits(2), OnLink: func() { links++ }}
	l.Setup(GPIE_NSICR, ITR(50*time.Microsecond))
	f.Check(t, map[uint32]uint32{GPIE: GPIE_NSICR, EITR0: 50 << 2, EIAC: 0, EIAM: 0,
		IMS: ICR_LSC, EIMS: EICR_OTHER})
	l.Arm(2, 3)
	f.Check(t, map[uint32]uint32{EIMS: 2, IMS: queueCauses})
	l.Disarm(2, 1)
	f.Check(t, map[uint32]uint32{EIMC: 2, IMC: ^uint32(0)})
	l.Disarm(1, 0)
	f.Check(t, map[uint32]uint32{EIMC: 1, IMC: queueCauses})
	f.Set(ICR, ICR_RXDW|ICR_LSC)
	f.Set(EICR, 2)
	if q := l.Causes(); q != 2 || links != 1 {
		t.Errorf("causes name queues %#x, %d link changes; want 0x2 and 1", q, links)
	}
	f.Set(ICR, ICR_RXDW)
	f.Set(EICR, 0)
	if q := l.Causes(); q != 3 {
		t.Errorf("RXDW without an EICR bit names queues %#x, want every one", q)
	}
}

func TestLink(t *testing.T) {
	for _, c := range []struct {
		status uint32
		want   nic.Link
	}{
		{0, nic.Link{}},
		{STATUS_LU, nic.Link{Up: true, SpeedMbps: 10}},
		{STATUS_LU | STATUS_FD | 1<<STATUS_SPEED_SHIFT, nic.Link{Up: true, FullDuplex: true, SpeedMbps: 100}},
		{STATUS_LU | STATUS_FD | 2<<STATUS_SPEED_SHIFT, nic.Link{Up: true, FullDuplex: true, SpeedMbps: 1000}},
		{STATUS_FD | 2<<STATUS_SPEED_SHIFT, nic.Link{}},
	} {
		if got := LinkFromStatus(c.status); got != c.want {
			t.Errorf("STATUS %#x: %+v, want %+v", c.status, got, c.want)
		}
	}
	var l Link
	up := nic.Link{Up: true, FullDuplex: true, SpeedMbps: 1000}
	if l.Set(nic.Link{}) || !l.Set(up) || l.Set(up) || l.Load() != up || l.Changes() != 1 {
		t.Errorf("link %+v after %d changes", l.Load(), l.Changes())
	}
}
