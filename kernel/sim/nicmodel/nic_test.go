package nicmodel

import (
	"strings"
	"sync"
	"testing"
)

type dmaStub struct{}

func (dmaStub) Read(uint64, []byte) error  { return nil }
func (dmaStub) Write(uint64, []byte) error { return nil }

type irqStub struct{}

func (irqStub) Raise()                 {}
func (irqStub) Message(uint64, uint32) {}
func (irqStub) SetLevel(bool)          {}

func TestCheckNew(t *testing.T) {
	def := [6]byte{0x52, 0x54, 0, 0x12, 0x34, 0x56}
	var mac [6]byte
	if err := CheckNew("mx", &mac, def, dmaStub{}, irqStub{}); err != nil || mac != def {
		t.Fatalf("zero MAC: %v, %x; want nil, %x", err, mac, def)
	}
	mac = [6]byte{2, 0, 0, 0, 0, 1}
	if err := CheckNew("mx", &mac, def, dmaStub{}, irqStub{}); err != nil || mac != [6]byte{2, 0, 0, 0, 0, 1} {
		t.Fatalf("given MAC: %v, %x", err, mac)
	}
	mac = [6]byte{1, 0, 0x5e, 0, 0, 1}
	if err := CheckNew("mx", &mac, def, dmaStub{}, irqStub{}); err == nil || !strings.Contains(err.Error(), "mx: MAC 01005e000001 is a multicast") {
		t.Fatalf("multicast MAC: %v", err)
	}
	mac = def
	if err := CheckNew("mx", &mac, def, nil, irqStub{}); err == nil || !strings.HasPrefix(err.Error(), "mx: ") {
		t.Fatalf("no DMA port: %v", err)
	}
	if err := CheckNew("mx", &mac, def, dmaStub{}, nil); err == nil {
		t.Fatal("no interrupt line accepted")
	}
}

func TestLockAll(t *testing.T) {
	var a, b, c sync.Mutex
	unlock := LockAll(&a, &b, &c)
	for i, mu := range []*sync.Mutex{&a, &b, &c} {
		if mu.TryLock() {
			t.Fatalf("lock %d not held", i)
		}
	}
	unlock()
	for i, mu := range []*sync.Mutex{&a, &b, &c} {
		if !mu.TryLock() {
			t.Fatalf("lock %d still held", i)
		}
		mu.Unlock()
	}
}

func TestSnapshotUnderLock(t *testing.T) {
	var mu sync.Mutex
	v := struct{ n int }{}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 1000 {
			mu.Lock()
			v.n++
			mu.Unlock()
		}
	}()
	last := 0
	for range 100 {
		s := Snapshot(&mu, &v)
		if s.n < last {
			t.Fatalf("snapshot went back from %d to %d", last, s.n)
		}
		last = s.n
	}
	wg.Wait()
	if s := Snapshot(&mu, &v); s.n != 1000 {
		t.Fatalf("snapshot %d, want 1000", s.n)
	}
}

func TestResetRegsAndRAR0(t *testing.T) {
	r := make([]uint32, 0x6000/4)
	for i := range r {
		r[i] = 0xdeadbeef
	}
	ResetRegs(r)
	want := map[uint32]uint32{
		MDIC:   MdicReady,
		TCTL:   TctlPSP | 0x0f<<4 | 0x3f<<12,
		RXCSUM: 1<<8 | 1<<9,
	}
	for off, v := range r {
		if w := want[uint32(off*4)]; v != w {
			t.Fatalf("register %#x = %#x after reset, want %#x", off*4, v, w)
		}
	}
	LoadRAR0(r, [6]byte{0x52, 0x54, 0x00, 0x12, 0x34, 0x56})
	if r[RAL0/4] != 0x12005452 || r[RAH0/4] != 0x80005634 {
		t.Fatalf("RAL0 %#x RAH0 %#x", r[RAL0/4], r[RAH0/4])
	}
}

func TestWriteEECD(t *testing.T) {
	const kept = EecdPres | EecdAutoRd | 2<<EecdSizeSh
	tests := []struct {
		cur, v, want uint32
	}{
		{kept, EecdReq, kept | EecdReq | EecdGnt}, // grant follows the request
		{kept | EecdReq | EecdGnt, EecdReq | EecdCS | EecdSK, kept | EecdReq | EecdGnt | EecdCS | EecdSK},
		{kept | EecdReq | EecdGnt | EecdCS, 0, kept},   // released: grant goes
		{kept, EecdGnt | EecdDO | ^uint32(0xff), kept}, // read-only bits ignored
		{kept | EecdReq | EecdGnt, EecdReq | EecdDI, kept | EecdReq | EecdGnt | EecdDI},
	}
	for _, tt := range tests {
		if got := WriteEECD(tt.cur, tt.v); got != tt.want {
			t.Errorf("EECD %#x, write %#x: %#x, want %#x", tt.cur, tt.v, got, tt.want)
		}
	}
}

func TestReadSWSM(t *testing.T) {
	r := make([]uint32, SWSM/4+1)
	if v := ReadSWSM(r); v&SwsmSMBI != 0 {
		t.Fatalf("first read %#x: semaphore already taken", v)
	}
	if v := ReadSWSM(r); v&SwsmSMBI == 0 {
		t.Fatalf("second read %#x: semaphore free, want taken by the first", v)
	}
	r[SWSM/4] &^= SwsmSMBI // software releases it
	if v := ReadSWSM(r); v&SwsmSMBI != 0 {
		t.Fatalf("read after release %#x: semaphore taken", v)
	}
}

func TestSpeedCode(t *testing.T) {
	for mbps, want := range map[int]uint32{10: 0, 100: 1, 1000: 2, 2500: 2} {
		if got := SpeedCode(mbps); got != want {
			t.Errorf("SpeedCode(%d) = %d, want %d", mbps, got, want)
		}
	}
}
