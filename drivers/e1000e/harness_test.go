package e1000e

import (
	"encoding/binary"
	"sync"
	"testing"
	"time"

	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/nicstat"
	"github.com/ether9/ether9/drivers/ring/ringtest"
	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/pci"
)

// regFile is a register file for driver unit tests: plain storage with the
// few side effects bring-up depends on (CTRL.RST self-clears, ICR clears on
// read, EERD answers from an NVM image). It moves no packets; tests play
// the device through the descriptor rings and ringtest.DMA.
type regFile struct {
	mu     sync.Mutex
	r      map[uint32]uint32
	nvm    []uint16
	writes map[uint32]int
}

func newRegFile(status uint32, mac [6]byte) *regFile {
	f := &regFile{r: map[uint32]uint32{STATUS: status, EECD: EECD_AUTO_RD}, writes: map[uint32]int{}}
	// Hardware loads the first receive address from the NVM at reset.
	if mac != [6]byte{} {
		f.r[RAL0] = uint32(mac[0]) | uint32(mac[1])<<8 | uint32(mac[2])<<16 | uint32(mac[3])<<24
		f.r[RAH0] = uint32(mac[4]) | uint32(mac[5])<<8 | RAH_AV
	}
	f.nvm = []uint16{uint16(mac[0]) | uint16(mac[1])<<8, uint16(mac[2]) | uint16(mac[3])<<8, uint16(mac[4]) | uint16(mac[5])<<8}
	return f
}

func (f *regFile) Read32(off uint32) uint32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	v := f.r[off]
	if off == ICR || (off >= nicstat.CRCERRS && off <= nicstat.TSCTFC) {
		f.r[off] = 0
	}
	return v
}

func (f *regFile) Write32(off uint32, v uint32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes[off]++
	switch off {
	case CTRL:
		if v&CTRL_RST != 0 {
			f.resetLocked()
		}
		v &^= CTRL_RST
	case EERD:
		if v&EERD_START != 0 {
			w := int(v >> EERD_ADDR_SHIFT & 0x3fff)
			var data uint16
			if w < len(f.nvm) {
				data = f.nvm[w]
			}
			v = uint32(data)<<EERD_DATA_SHIFT | EERD_DONE
		}
	case ICS:
		f.r[ICR] |= v
		return
	}
	f.r[off] = v
}

// resetLocked is CTRL.RST: every register back to zero but STATUS (the
// link) and EECD, the station address reloaded from the NVM.
func (f *regFile) resetLocked() {
	status, eecd := f.r[STATUS], f.r[EECD]
	clear(f.r)
	f.r[STATUS], f.r[EECD] = status, eecd
	if len(f.nvm) >= 3 && (f.nvm[0] != 0 || f.nvm[1] != 0 || f.nvm[2] != 0) {
		f.r[RAL0] = uint32(f.nvm[0]) | uint32(f.nvm[1])<<16
		f.r[RAH0] = uint32(f.nvm[2]) | RAH_AV
	}
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

func (f *regFile) count(off uint32) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.writes[off]
}

// testClock advances on Sleep.
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

const status1000 = STATUS_LU | STATUS_FD | 2<<STATUS_SPEED_SHIFT

var testMAC = [6]byte{0x52, 0x54, 0x00, 0x12, 0x34, 0x56}

type rig struct {
	d    *Device
	regs *regFile
	dma  *ringtest.DMA
}

func newRig(t testing.TB, device uint16) *rig {
	t.Helper()
	regs := newRegFile(status1000, testMAC)
	dma := ringtest.New()
	d, err := probe(&nic.Device{
		Name:  "ether0",
		Func:  &pci.Function{Vendor: VendorIntel, Device: device},
		Regs:  regs,
		DMA:   dma,
		Clock: &testClock{},
	})
	if err != nil {
		t.Fatal(err)
	}
	return &rig{d: d, regs: regs, dma: dma}
}

// rxAddr reads the buffer address armed in RX descriptor i.
func (r *rig) rxAddr(i int) kernel.DMAAddr {
	return kernel.DMAAddr(binary.LittleEndian.Uint64(r.d.rx.Descs.At(i)))
}

// complete plays the device: writes payload into descriptor i's buffer and
// the write-back with staterr and length.
func (r *rig) complete(t testing.TB, i int, payload []byte, staterr uint32, length int) {
	t.Helper()
	if len(payload) > 0 {
		if err := r.dma.DeviceWrite(r.rxAddr(i), payload); err != nil {
			t.Fatal(err)
		}
	}
	d := r.d.rx.Descs.At(i)
	binary.LittleEndian.PutUint32(d[8:], staterr)
	binary.LittleEndian.PutUint16(d[12:], uint16(length))
}

func (r *rig) poll() []*nic.RxPacket {
	var got []*nic.RxPacket
	r.d.Poll(64, func(p *nic.RxPacket) { got = append(got, p) })
	return got
}

func (r *rig) close(t testing.TB) {
	t.Helper()
	if err := r.d.Close(); err != nil {
		t.Fatal(err)
	}
	if n := r.dma.Live(); n != 0 {
		t.Fatalf("%d streaming mappings leaked", n)
	}
}
