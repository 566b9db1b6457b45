package igb

import (
	"encoding/binary"
	"github.com/ether9/ether9/drivers/advregs"
	"sync"
	"testing"
	"time"

	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/ring/ringtest"
	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/pci"
)

// regFile is a register file for driver unit tests: plain storage with the
// side effects bring-up depends on (CTRL.RST self-clears, ICR and the
// statistics clear on read). It moves no packets: tests play the device
// through the descriptor rings and ringtest.DMA.
type regFile struct {
	mu     sync.Mutex
	r      map[uint32]uint32
	writes map[uint32]int
	phy    [32]uint16
}

func newRegFile(mac [6]byte) *regFile {
	f := &regFile{r: map[uint32]uint32{
		advregs.STATUS: advregs.STATUS_LU | advregs.STATUS_FD | 2<<advregs.STATUS_SPEED_SHIFT,
		advregs.EECD:   advregs.EECD_AUTO_RD,
	}, writes: map[uint32]int{}}
	f.r[advregs.RAL0] = uint32(mac[0]) | uint32(mac[1])<<8 | uint32(mac[2])<<16 | uint32(mac[3])<<24
	f.r[advregs.RAH0] = uint32(mac[4]) | uint32(mac[5])<<8 | advregs.RAH_AV
	return f
}

func (f *regFile) Read32(off uint32) uint32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	v := f.r[off]
	if off == advregs.ICR || (off >= CRCERRS && off <= TSCTFC) {
		f.r[off] = 0
	}
	return v
}

func (f *regFile) Write32(off uint32, v uint32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes[off]++
	switch off {
	case advregs.CTRL:
		v &^= advregs.CTRL_RST
	case advregs.MDIC: // PHY registers: plain storage, always ready
		reg := v >> advregs.MDIC_REG_SHIFT & 0x1f
		if v&advregs.MDIC_OP_WRITE != 0 {
			f.phy[reg] = uint16(v)
		} else {
			v = v&^advregs.MDIC_DATA_MASK | uint32(f.phy[reg])
		}
		v |= advregs.MDIC_READY
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

// rig is a probed driver over the register file, with the test playing
// the device: rxHead/txHead are the device's head pointers per queue.
type rig struct {
	d      *Device
	regs   *regFile
	dma    *ringtest.DMA // nil when the rig runs on other DMA
	dev    deviceMem
	rxHead []int
	txHead []int
	wire   [][]byte // frames the device sent
}

// deviceMem is the device's side of DMA: what the rig reads and writes
// through descriptor addresses.
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
	regs := newRegFile(testMAC)
	d, err := probe(&nic.Device{
		Name:  "ether0",
		Func:  &pci.Function{Vendor: VendorIntel, Device: 0x10c9},
		Regs:  regs,
		DMA:   dma,
		Clock: &testClock{},
	})
	if err != nil {
		t.Fatal(err)
	}
	return &rig{d: d, regs: regs, dev: dev, rxHead: make([]int, len(d.queues)), txHead: make([]int, len(d.queues))}
}

// rxTail is the tail the driver last wrote for queue q.
func (r *rig) rxTail(q int) int { return int(r.regs.get(advregs.QueueReg(advregs.RDT, q))) }

// deliver plays the device receiving frame f on queue q: it takes the
// descriptor at the device's head (if the driver armed it), writes the
// frame into its buffer and the write-back. It reports false when the
// queue had no armed descriptor (the device would count a miss).
func (r *rig) deliver(t testing.TB, q int, f []byte, staterr uint32, hash uint32) bool {
	t.Helper()
	h := r.rxHead[q]
	if h == r.rxTail(q) {
		return false
	}
	desc := r.d.queues[q].rx.Descs.At(h)
	addr := kernel.DMAAddr(binary.LittleEndian.Uint64(desc))
	if err := r.dev.DeviceWrite(addr, f); err != nil {
		t.Fatalf("queue %d descriptor %d: %v", q, h, err)
	}
	r.writeback(q, h, staterr|RXD_STAT_DD, len(f), hash)
	r.rxHead[q] = r.d.queues[q].rx.Descs.Next(h)
	return true
}

func (r *rig) writeback(q, i int, staterr uint32, n int, hash uint32) {
	desc := r.d.queues[q].rx.Descs.At(i)
	binary.LittleEndian.PutUint32(desc[0:], 1) // RSS type: TCP/IPv4
	binary.LittleEndian.PutUint32(desc[4:], hash)
	binary.LittleEndian.PutUint32(desc[8:], staterr)
	binary.LittleEndian.PutUint16(desc[12:], uint16(n))
	binary.LittleEndian.PutUint16(desc[14:], 0)
}

// transmit plays the device's transmitter on queue q: every descriptor up
// to the tail is fetched, data gathered into frames, DD written on RS.
// It returns the data descriptors' cmd_type_len and olinfo words too.
func (r *rig) transmit(t testing.TB, q int) (ctxs [][]byte) {
	t.Helper()
	tx := r.d.queues[q].tx
	tail := int(r.regs.get(advregs.QueueReg(advregs.TDT, q)))
	var cur []byte
	for h := r.txHead[q]; h != tail; h = tx.Descs.Next(h) {
		desc := tx.Descs.At(h)
		ctl := binary.LittleEndian.Uint32(desc[8:])
		if ctl&ADVTXD_DCMD_DEXT == 0 {
			t.Fatalf("queue %d descriptor %d is not extended: %#x", q, h, ctl)
		}
		switch ctl & (0xf << 20) {
		case ADVTXD_DTYP_CTXT:
			ctxs = append(ctxs, append([]byte(nil), desc...))
		case ADVTXD_DTYP_DATA:
			n := int(ctl & ADVTXD_LEN_MASK)
			if a := binary.LittleEndian.Uint64(desc); int(a%kernel.PageSize)+n > kernel.PageSize {
				t.Fatalf("queue %d descriptor %d: %d bytes at %#x cross a page", q, h, n, a)
			}
			b := make([]byte, n)
			if err := r.dev.DeviceRead(kernel.DMAAddr(binary.LittleEndian.Uint64(desc)), b); err != nil {
				t.Fatalf("queue %d descriptor %d: %v", q, h, err)
			}
			cur = append(cur, b...)
			if ctl&ADVTXD_DCMD_EOP != 0 {
				r.wire = append(r.wire, cur)
				cur = nil
			}
		default:
			t.Fatalf("queue %d descriptor %d: type %#x", q, h, ctl>>20&0xf)
		}
		if ctl&ADVTXD_DCMD_RS != 0 {
			desc[12] |= ADVTXD_STAT_DD
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
		t.Fatalf("%d streaming mappings leaked", n)
	}
}

// frame builds an n-byte frame to the NIC with a recognisable body.
func frame(n int, seed byte) []byte {
	f := make([]byte, n)
	copy(f, testMAC[:])
	copy(f[6:], []byte{0x02, 0, 0, 0, 0, 9})
	f[12], f[13] = 0x88, 0xb5
	for i := 14; i < n; i++ {
		f[i] = seed + byte(i)
	}
	return f
}
