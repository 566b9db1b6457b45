// Package advplay plays the queues of an advanced-descriptor NIC (82576,
// I210, I225) for a driver's unit tests. The test is the device: it takes
// the receive descriptors the driver armed, writes frames into their
// buffers and the write-back, and fetches transmit descriptors up to the
// tail, gathering their data into frames and writing DD where RS asks.
package advplay

import (
	"encoding/binary"
	"testing"

	"github.com/ether9/ether9/drivers/adv"
	"github.com/ether9/ether9/drivers/ring"
	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/sim"
)

// Mem is the device's side of DMA: what it reads and writes through the
// addresses in descriptors.
type Mem interface {
	DeviceWrite(addr kernel.DMAAddr, b []byte) error
	DeviceRead(addr kernel.DMAAddr, b []byte) error
}

// Regs shows the device its registers as the driver left them.
type Regs interface {
	Get(off uint32) uint32
}

// Rings gives queue q's current receive and transmit descriptor rings
// (the driver may make new ones).
type Rings func(q int) (rx, tx *ring.Descs)

// Device is the device's state: its head per queue and what it sent.
type Device struct {
	regs   Regs
	mem    Mem
	rings  Rings
	RxHead []int
	TxHead []int
	Wire   [][]byte // frames the device sent, oldest first
}

// New is a device of n queue pairs at descriptor 0.
func New(regs Regs, mem Mem, n int, rings Rings) *Device {
	return &Device{regs: regs, mem: mem, rings: rings, RxHead: make([]int, n), TxHead: make([]int, n)}
}

// RxTail is the tail the driver last wrote for queue q.
func (d *Device) RxTail(q int) int { return int(d.regs.Get(adv.QueueReg(adv.RDT, q))) }

// RxAddr is the buffer address in the read descriptor at queue q's head.
func (d *Device) RxAddr(q int) kernel.DMAAddr {
	rx, _ := d.rings(q)
	return kernel.DMAAddr(binary.LittleEndian.Uint64(rx.At(d.RxHead[q])))
}

// RestartRx follows the driver's re-enable of queue q: the device starts
// again at descriptor 0.
func (d *Device) RestartRx(q int) { d.RxHead[q] = 0 }

// Deliver receives frame f on queue q: the frame goes into the buffer of
// the descriptor at the head, then the write-back with staterr (and DD)
// and the RSS hash. It reports false when the queue had no armed
// descriptor (the device would count a miss).
func (d *Device) Deliver(t testing.TB, q int, f []byte, staterr, hash uint32) bool {
	t.Helper()
	h := d.RxHead[q]
	if h == d.RxTail(q) {
		return false
	}
	if err := d.mem.DeviceWrite(d.RxAddr(q), f); err != nil {
		t.Fatalf("queue %d descriptor %d: %v", q, h, err)
	}
	d.Writeback(q, h, staterr|adv.RXD_STAT_DD, len(f), hash)
	rx, _ := d.rings(q)
	d.RxHead[q] = rx.Next(h)
	return true
}

// Writeback writes receive descriptor i of queue q back: RSS type
// TCP/IPv4 with hash, staterr, n bytes, no VLAN.
func (d *Device) Writeback(q, i int, staterr uint32, n int, hash uint32) {
	rx, _ := d.rings(q)
	desc := rx.At(i)
	binary.LittleEndian.PutUint32(desc[0:], 1)
	binary.LittleEndian.PutUint32(desc[4:], hash)
	binary.LittleEndian.PutUint32(desc[8:], staterr)
	binary.LittleEndian.PutUint16(desc[12:], uint16(n))
	binary.LittleEndian.PutUint16(desc[14:], 0)
}

// Transmit runs queue q's transmitter up to the tail: every descriptor
// must be extended, a data buffer may not cross a page, data descriptors
// are gathered into frames ending at EOP, DD is written where RS asks.
// It returns the context descriptors met.
func (d *Device) Transmit(t testing.TB, q int) (ctxs [][]byte) {
	t.Helper()
	_, tx := d.rings(q)
	tail := int(d.regs.Get(adv.QueueReg(adv.TDT, q)))
	var cur []byte
	for h := d.TxHead[q]; h != tail; h = tx.Next(h) {
		desc := tx.At(h)
		ctl := binary.LittleEndian.Uint32(desc[8:])
		if ctl&adv.TXD_DCMD_DEXT == 0 {
			t.Fatalf("queue %d descriptor %d is not extended: %#x", q, h, ctl)
		}
		switch ctl & (0xf << 20) {
		case adv.TXD_DTYP_CTXT:
			ctxs = append(ctxs, append([]byte(nil), desc...))
		case adv.TXD_DTYP_DATA:
			n := int(ctl & adv.TXD_LEN_MASK)
			a := binary.LittleEndian.Uint64(desc)
			if int(a%kernel.PageSize)+n > kernel.PageSize {
				t.Fatalf("queue %d descriptor %d: %d bytes at %#x cross a page", q, h, n, a)
			}
			b := make([]byte, n)
			if err := d.mem.DeviceRead(kernel.DMAAddr(a), b); err != nil {
				t.Fatalf("queue %d descriptor %d: %v", q, h, err)
			}
			cur = append(cur, b...)
			if ctl&adv.TXD_DCMD_EOP != 0 {
				d.Wire = append(d.Wire, cur)
				cur = nil
			}
		default:
			t.Fatalf("queue %d descriptor %d: type %#x", q, h, ctl>>20&0xf)
		}
		if ctl&adv.TXD_DCMD_RS != 0 {
			desc[12] |= adv.TXD_STAT_DD
		}
	}
	if cur != nil {
		t.Fatalf("queue %d: frame without EOP", q)
	}
	d.TxHead[q] = tail
	return ctxs
}

// PhysMem is the device's side of untranslated DMA on simulated memory:
// descriptor addresses are physical.
type PhysMem struct{ M *sim.Memory }

// DeviceWrite writes b at physical address a.
func (p PhysMem) DeviceWrite(a kernel.DMAAddr, b []byte) error {
	return p.M.DeviceWrite(kernel.PhysAddr(a), b)
}

// DeviceRead reads b from physical address a.
func (p PhysMem) DeviceRead(a kernel.DMAAddr, b []byte) error {
	return p.M.DeviceRead(kernel.PhysAddr(a), b)
}
