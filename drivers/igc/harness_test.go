package igc

import (
	"encoding/binary"
	"github.com/ether9/ether9/drivers/advregs"
	"sync"
	"testing"
	"time"

	"github.com/ether9/ether9/drivers/advdesc"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/nicstat"
	"github.com/ether9/ether9/drivers/ring/ringtest"
	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/pci"
)

// regFile is a register file for unit tests: plain storage plus the side
// effects bring-up needs (DEV_RST self-clears, ICR and statistics clear
// on read, EERD answers from an NVM image). It moves no packets: the tests
// play the device through the rings.
type regFile struct {
	mu  sync.Mutex
	r   map[uint32]uint32
	nvm []uint16
}

func newRegFile(status uint32) *regFile {
	return &regFile{r: map[uint32]uint32{advregs.STATUS: status, advregs.EECD: advregs.EECD_AUTO_RD}}
}

// withMAC loads m into RAL0/RAH0 as the hardware does from a good NVM.
func (f *regFile) withMAC(m [6]byte) *regFile {
	f.r[advregs.RAL0] = uint32(m[0]) | uint32(m[1])<<8 | uint32(m[2])<<16 | uint32(m[3])<<24
	f.r[advregs.RAH0] = uint32(m[4]) | uint32(m[5])<<8 | advregs.RAH_AV
	return f
}

func (f *regFile) Read32(off uint32) uint32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	v := f.r[off]
	if off == advregs.ICR || (off >= nicstat.CRCERRS && off <= nicstat.TSCTC) {
		f.r[off] = 0
	}
	return v
}

func (f *regFile) Write32(off, v uint32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch off {
	case advregs.CTRL:
		v &^= CTRL_DEV_RST
	case advregs.MDIC:
		v |= advregs.MDIC_READY
	case EERD:
		w := int(v >> advregs.EERD_ADDR_SHIFT & 0x3fff)
		d := uint16(0xffff) // erased flash
		if w < len(f.nvm) {
			d = f.nvm[w]
		}
		v = uint32(d)<<advregs.EERD_DATA_SHIFT | advregs.EERD_DONE
	}
	f.r[off] = v
}

func (f *regFile) Read64(off uint32) uint64 {
	return uint64(f.Read32(off)) | uint64(f.Read32(off+4))<<32
}

func (f *regFile) Write64(off uint32, v uint64) {
	f.Write32(off, uint32(v))
	f.Write32(off+4, uint32(v>>32))
}

func (f *regFile) get(off uint32) uint32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.r[off]
}

func (f *regFile) set(off, v uint32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.r[off] = v
}

type testClock struct {
	mu  sync.Mutex
	now time.Duration
}

func (c *testClock) Now() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Sleep(d time.Duration) {
	c.mu.Lock()
	c.now += d
	c.mu.Unlock()
}

var testMAC = [6]byte{0x52, 0x54, 0x00, 0x12, 0x34, 0x56}

// status2500 is STATUS of a full-duplex 2.5 Gb/s link.
const status2500 = advregs.STATUS_LU | advregs.STATUS_FD | 2<<advregs.STATUS_SPEED_SHIFT | STATUS_SPEED_2500

// rig is a probed driver over the register file, the test playing the
// device: rxHead and txHead are its head pointers per queue.
type rig struct {
	d      *Device
	regs   *regFile
	dma    *ringtest.DMA // nil when the rig runs on other DMA
	dev    deviceMem
	rxHead []int
	txHead []int
	wire   [][]byte
}

func probeOn(regs *regFile, dma kernel.DMA, device uint16) (*Device, error) {
	return probe(&nic.Device{
		Name:  "ether0",
		Func:  &pci.Function{Addr: pci.Addr{Bus: 3, Dev: 0, Fn: 0}, Vendor: VendorIntel, Device: device},
		Regs:  regs,
		DMA:   dma,
		Clock: &testClock{},
	})
}

// deviceMem is the device's side of DMA.
type deviceMem interface {
	DeviceWrite(addr kernel.DMAAddr, b []byte) error
	DeviceRead(addr kernel.DMAAddr, b []byte) error
}

func newRig(t testing.TB) *rig {
	dma := ringtest.New()
	r := newRigOn(t, dma, dma)
	r.dma = dma
	return r
}

// newRigOn probes over any DMA, dev being its device side.
func newRigOn(t testing.TB, dma kernel.DMA, dev deviceMem) *rig {
	t.Helper()
	regs := newRegFile(status2500).withMAC(testMAC)
	d, err := probeOn(regs, dma, 0x15f3)
	if err != nil {
		t.Fatal(err)
	}
	return &rig{d: d, regs: regs, dev: dev, rxHead: make([]int, len(d.queues)), txHead: make([]int, len(d.queues))}
}

// rxTail is the tail the driver last wrote for queue q.
func (r *rig) rxTail(q int) int { return int(r.regs.get(advregs.QueueReg(advregs.RDT, q))) }

// rxAddr is the buffer address in the read descriptor at the device's head.
func (r *rig) rxAddr(q int) kernel.DMAAddr {
	return kernel.DMAAddr(binary.LittleEndian.Uint64(r.d.queues[q].rx.Descs.At(r.rxHead[q])))
}

// restartRx follows the driver's re-enable of queue q: the device starts
// again at descriptor 0.
func (r *rig) restartRx(q int) { r.rxHead[q] = 0 }

// deliver plays the device receiving f on queue q: the frame goes into
// the buffer at the head descriptor, then the write-back. It reports
// false when the queue had no armed descriptor.
func (r *rig) deliver(t testing.TB, q int, f []byte, staterr uint32) bool {
	t.Helper()
	h := r.rxHead[q]
	if h == r.rxTail(q) {
		return false
	}
	if err := r.dev.DeviceWrite(r.rxAddr(q), f); err != nil {
		t.Fatalf("queue %d descriptor %d: %v", q, h, err)
	}
	r.writeback(q, h, staterr|advdesc.RXD_STAT_DD, len(f), 0x1234)
	r.rxHead[q] = r.d.queues[q].rx.Descs.Next(h)
	return true
}

func (r *rig) writeback(q, i int, staterr uint32, n int, hash uint32) {
	desc := r.d.queues[q].rx.Descs.At(i)
	binary.LittleEndian.PutUint32(desc[0:], 1)
	binary.LittleEndian.PutUint32(desc[4:], hash)
	binary.LittleEndian.PutUint32(desc[8:], staterr)
	binary.LittleEndian.PutUint16(desc[12:], uint16(n))
	binary.LittleEndian.PutUint16(desc[14:], 0)
}

// poll cleans queue q and returns the delivered packets' bytes.
func (r *rig) poll(q int) (out [][]byte) {
	r.d.queues[q].Poll(rxDescs, func(p *nic.RxPacket) {
		out = append(out, p.Data.Flatten())
		p.Data.Release()
	})
	return out
}

// transmit plays the transmitter of queue q up to the tail: data gathered
// into frames, DD written on RS; it returns the context descriptors.
func (r *rig) transmit(t testing.TB, q int) (ctxs [][]byte) {
	t.Helper()
	tx := r.d.queues[q].tx
	tail := int(r.regs.get(advregs.QueueReg(advregs.TDT, q)))
	var cur []byte
	for h := r.txHead[q]; h != tail; h = tx.Descs.Next(h) {
		desc := tx.Descs.At(h)
		ctl := binary.LittleEndian.Uint32(desc[8:])
		switch ctl & (0xf << 20) {
		case advdesc.TXD_DTYP_CTXT:
			ctxs = append(ctxs, append([]byte(nil), desc...))
		case advdesc.TXD_DTYP_DATA:
			b := make([]byte, ctl&advdesc.TXD_LEN_MASK)
			if err := r.dev.DeviceRead(kernel.DMAAddr(binary.LittleEndian.Uint64(desc)), b); err != nil {
				t.Fatalf("queue %d descriptor %d: %v", q, h, err)
			}
			cur = append(cur, b...)
			if ctl&advdesc.TXD_DCMD_EOP != 0 {
				r.wire = append(r.wire, cur)
				cur = nil
			}
		default:
			t.Fatalf("queue %d descriptor %d: type %#x", q, h, ctl>>20&0xf)
		}
		if ctl&advdesc.TXD_DCMD_RS != 0 {
			desc[12] |= advdesc.TXD_STAT_DD
		}
	}
	if cur != nil {
		t.Fatalf("queue %d: frame without EOP", q)
	}
	r.txHead[q] = tail
	return ctxs
}

func (r *rig) stat(t testing.TB, name string) uint64 {
	t.Helper()
	for _, s := range r.d.Stats() {
		if s.Name == name {
			return s.Value
		}
	}
	t.Fatalf("no stat %q", name)
	return 0
}

func (r *rig) close(t testing.TB) {
	t.Helper()
	if err := r.d.Close(); err != nil {
		t.Fatal(err)
	}
	if r.dma == nil {
		return
	}
	if n := r.dma.Live(); n != 0 {
		t.Fatalf("%d DMA mappings left after close", n)
	}
}

// udpFrame is an n-byte Ethernet/IPv4/UDP frame whose bytes count from
// seed, headers filled in so that header parsing sees UDP.
func udpFrame(n int, seed byte) []byte {
	f := make([]byte, n)
	for i := range f {
		f[i] = seed + byte(i)
	}
	copy(f[0:6], testMAC[:])
	binary.BigEndian.PutUint16(f[12:], etherTypeIPv4)
	f[14] = 0x45
	binary.BigEndian.PutUint16(f[16:], uint16(n-14))
	binary.BigEndian.PutUint16(f[20:], 0) // not a fragment
	f[23] = 17
	return f
}
