package sim

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ether9/ether9/kernel"
)

func TestAllocRegistry(t *testing.T) {
	m := NewMemory()
	var regions []kernel.Region
	seen := map[kernel.PhysAddr]bool{}
	for _, c := range []struct{ size, align int }{{100, 8}, {4096, 4096}, {10000, 64}, {1, 1 << 21}, {8192, 4096}} {
		r, err := m.Alloc(c.size, c.align)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Buf) != c.size || uint64(r.Phys)%uint64(max(c.align, kernel.PageSize)) != 0 {
			t.Errorf("alloc %+v: %d bytes at %#x", c, len(r.Buf), r.Phys)
		}
		for p := r.Phys; p < r.Phys+kernel.PhysAddr(c.size); p += kernel.PageSize {
			if seen[p&^(kernel.PageSize-1)] {
				t.Fatalf("physical page %#x handed out twice", p)
			}
			seen[p&^(kernel.PageSize-1)] = true
		}
		for i := range r.Buf {
			r.Buf[i] = byte(i)
		}
		regions = append(regions, r)
	}
	// Devices see exactly the CPU's bytes, across page boundaries.
	got := make([]byte, 5000)
	if err := m.DeviceRead(regions[2].Phys+10, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, regions[2].Buf[10:5010]) {
		t.Error("device read differs from the CPU slice")
	}
	if err := m.DeviceWrite(regions[1].Phys+4094, []byte{0xaa, 0xbb}); err != nil {
		t.Fatal(err)
	}
	if regions[1].Buf[4094] != 0xaa || regions[1].Buf[4095] != 0xbb {
		t.Error("device write not in the CPU slice of coherent memory")
	}
	// Past the end: the guard page.
	if err := m.DeviceRead(regions[1].Phys+4095, make([]byte, 2)); !errors.Is(err, ErrUnregistered) {
		t.Errorf("read across the end: %v", err)
	}
	before := append([]byte(nil), regions[0].Buf...)
	if err := m.DeviceWrite(regions[0].Phys+90, make([]byte, 20)); !errors.Is(err, ErrUnregistered) {
		t.Errorf("write across the end: %v", err)
	}
	if !bytes.Equal(before, regions[0].Buf) {
		t.Error("a failed device write changed memory")
	}
	// Free, then the range is gone and stays unused.
	if err := m.Free(regions[4]); err != nil {
		t.Fatal(err)
	}
	if err := m.DeviceRead(regions[4].Phys, make([]byte, 1)); !errors.Is(err, ErrUnregistered) {
		t.Errorf("read of freed memory: %v", err)
	}
	if err := m.Free(regions[4]); err == nil {
		t.Error("double free accepted")
	}
	if err := m.Free(kernel.Region{Buf: make([]byte, 100), Phys: regions[0].Phys}); err == nil {
		t.Error("free with a foreign buffer accepted")
	}
	r, _ := m.Alloc(8192, 4096)
	if r.Phys <= regions[4].Phys {
		t.Errorf("physical range %#x reused after free", r.Phys)
	}
	for _, c := range []struct{ size, align int }{{0, 8}, {-1, 8}, {10, 3}, {10, 0}, {1 << 40, 8}, {8, 1 << 40}} {
		if _, err := m.Alloc(c.size, c.align); err == nil {
			t.Errorf("alloc %+v accepted", c)
		}
	}
}

func TestPin(t *testing.T) {
	m := NewMemory()
	backing := make([]byte, 3*kernel.PageSize)
	buf := backing[100 : 100+2*kernel.PageSize]
	segs, err := m.Pin(buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(segs) != 1 || segs[0].Len != len(buf) {
		t.Fatalf("segments %+v", segs)
	}
	// The physical page offset matches the buffer's offset in its page.
	if uint64(segs[0].Phys)%kernel.PageSize != uint64(keyOf(buf))%kernel.PageSize {
		t.Errorf("physical offset %#x differs from the buffer's", uint64(segs[0].Phys)%kernel.PageSize)
	}
	copy(buf, "pinned")
	got := make([]byte, 6)
	if err := m.DeviceRead(segs[0].Phys, got); err != nil || string(got) != "pinned" {
		t.Fatalf("device read %q, %v", got, err)
	}
	// Pinning again is counted; the segments are the same.
	again, err := m.Pin(buf)
	if err != nil || again[0] != segs[0] {
		t.Fatalf("second pin: %+v, %v", again, err)
	}
	if err := m.Unpin(buf); err != nil {
		t.Fatal(err)
	}
	if err := m.DeviceRead(segs[0].Phys, got); err != nil {
		t.Fatalf("one pin left, but memory gone: %v", err)
	}
	if err := m.Unpin(buf); err != nil {
		t.Fatal(err)
	}
	if err := m.DeviceRead(segs[0].Phys, got); !errors.Is(err, ErrUnregistered) {
		t.Fatalf("read after the last unpin: %v", err)
	}
	if err := m.Unpin(buf); !errors.Is(err, kernel.ErrNotMapped) {
		t.Errorf("unpin of an unpinned buffer: %v", err)
	}
	if _, err := m.Pin(nil); !errors.Is(err, kernel.ErrZeroLength) {
		t.Errorf("pin of nothing: %v", err)
	}
	// A buffer inside an allocation is already registered.
	r, _ := m.Alloc(4096, 4096)
	if _, err := m.Pin(r.Buf[10:20]); err == nil {
		t.Error("pin inside an allocation accepted")
	}
}

func TestPinScatter(t *testing.T) {
	m := NewMemory()
	m.SetScatter(true)
	backing := make([]byte, 4*kernel.PageSize)
	buf := backing[kernel.PageSize-10 : 3*kernel.PageSize+5]
	segs, err := m.Pin(buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(segs) != 4 {
		t.Fatalf("%d segments, want 4: %+v", len(segs), segs)
	}
	total := 0
	for i, s := range segs {
		total += s.Len
		if i > 0 && (s.Phys%kernel.PageSize != 0 || segs[i-1].Phys+kernel.PhysAddr(segs[i-1].Len) == s.Phys) {
			t.Errorf("segment %d at %#x not a separate page", i, s.Phys)
		}
	}
	if total != len(buf) || segs[0].Len != 10 || segs[3].Len != 5 {
		t.Errorf("segments %+v", segs)
	}
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	off := 0
	for _, s := range segs {
		got := make([]byte, s.Len)
		if err := m.DeviceRead(s.Phys, got); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, buf[off:off+s.Len]) {
			t.Errorf("segment at %#x holds the wrong bytes", s.Phys)
		}
		off += s.Len
	}
	if err := m.Unpin(buf); err != nil {
		t.Fatal(err)
	}
	if st := m.Stats(); st.BytesRegistered != 0 {
		t.Errorf("%d bytes still registered", st.BytesRegistered)
	}
}

func TestNonCoherent(t *testing.T) {
	m := NewMemory()
	if !m.DMACoherent() {
		t.Fatal("new memory says it is not coherent")
	}
	m.SetCoherent(false)
	if m.DMACoherent() {
		t.Fatal("non-coherent memory says it is coherent")
	}
	buf := make([]byte, 256)
	segs, err := m.Pin(buf)
	if err != nil {
		t.Fatal(err)
	}
	p := segs[0].Phys
	// A device write is invisible to the CPU before SyncForCPU.
	if err := m.DeviceWrite(p+16, []byte("frame")); err != nil {
		t.Fatal(err)
	}
	if string(buf[16:21]) == "frame" {
		t.Fatal("device write visible before SyncForCPU")
	}
	m.SyncForCPU(p, 64)
	if string(buf[16:21]) != "frame" {
		t.Fatal("device write invisible after SyncForCPU")
	}
	// A CPU write is invisible to the device before SyncForDevice.
	copy(buf[100:], "reply")
	got := make([]byte, 5)
	m.DeviceRead(p+100, got)
	if string(got) == "reply" {
		t.Fatal("CPU write visible to the device before SyncForDevice")
	}
	m.SyncForDevice(p+96, 16)
	m.DeviceRead(p+100, got)
	if string(got) != "reply" {
		t.Fatal("CPU write invisible to the device after SyncForDevice")
	}
	// A partial sync moves only its range. The CPU hands the frame's
	// bytes back before the device writes them again.
	m.SyncForDevice(p, 64)
	m.DeviceWrite(p, []byte("ab"))
	m.SyncForCPU(p+1, 1)
	if buf[0] == 'a' || buf[1] != 'b' {
		t.Errorf("partial sync moved %q", buf[:2])
	}
	// Coherent allocations stay coherent.
	r, _ := m.Alloc(64, 64)
	m.DeviceWrite(r.Phys, []byte("ring"))
	if string(r.Buf[:4]) != "ring" {
		t.Error("coherent allocation not coherent in non-coherent mode")
	}
	// Going coherent hands the device's data to the CPU.
	m.DeviceWrite(p+200, []byte("late"))
	m.SetCoherent(true)
	if !m.DMACoherent() {
		t.Error("memory switched back still says it is not coherent")
	}
	if string(buf[200:204]) != "late" {
		t.Error("device data lost switching to coherent")
	}
	// Syncs of unregistered memory are recorded misuses.
	m.SyncForCPU(0x10, 4)
	m.SyncForDevice(p, 0)
	if errs := m.Errors(); len(errs) != 2 || !errors.Is(errs[0], ErrUnregistered) {
		t.Errorf("misuses %v", errs)
	}
	if st := m.Stats(); st.Misuses != 2 || st.SyncsForCPU != 3 {
		t.Errorf("stats %+v", st)
	}
}

func TestFlushTracking(t *testing.T) {
	m := NewMemory()
	m.SetFlushTracking(true)
	v := m.TableView()
	r, _ := m.Alloc(2*kernel.PageSize, kernel.PageSize)
	copy(r.Buf[8:], "root")
	got := make([]byte, 4)
	if err := v.DeviceRead(r.Phys+8, got); err != nil || string(got) != "\x00\x00\x00\x00" {
		t.Fatalf("unflushed write seen by the walker: %q, %v", got, err)
	}
	m.FlushCache(r.Buf[8:12])
	if v.DeviceRead(r.Phys+8, got); string(got) != "root" {
		t.Fatalf("flushed write not seen: %q", got)
	}
	// Flushing is by cache line: a neighbour in the same line goes too,
	// one in the next line does not.
	copy(r.Buf[60:], "ab")
	copy(r.Buf[64:], "cd")
	m.FlushCache(r.Buf[61:62])
	line := make([]byte, 6)
	v.DeviceRead(r.Phys+60, line)
	if string(line[:2]) != "ab" || line[4] != 0 {
		t.Errorf("line flush: %q", line)
	}
	// A flush across the page boundary.
	copy(r.Buf[kernel.PageSize-2:], "xyzw")
	m.FlushCache(r.Buf[kernel.PageSize-2 : kernel.PageSize+2])
	v.DeviceRead(r.Phys+kernel.PageSize-2, got)
	if string(got) != "xyzw" {
		t.Errorf("cross-page flush: %q", got)
	}
	// A later write is stale until flushed again.
	copy(r.Buf[8:], "ROOT")
	if v.DeviceRead(r.Phys+8, got); string(got) != "root" {
		t.Errorf("walker saw %q before the flush", got)
	}
	// The CPU's own device view is unaffected by tracking.
	m.DeviceRead(r.Phys+8, got)
	if string(got) != "ROOT" {
		t.Errorf("device view %q", got)
	}
	m.FlushCache(make([]byte, 8))
	if len(m.Errors()) != 1 {
		t.Error("flush of unregistered memory not recorded")
	}
	// Tracking off: the walker sees the CPU's writes at once.
	m.SetFlushTracking(false)
	if v.DeviceRead(r.Phys+8, got); string(got) != "ROOT" {
		t.Errorf("walker without tracking saw %q", got)
	}
}

// TestOwnership: a device write to bytes synced for the CPU and not handed
// back with SyncForDevice is a recorded misuse naming the first such byte,
// on non-coherent memory and on coherent memory that checks ownership;
// bytes handed back, never synced, or of another buffer are the device's.
func TestOwnership(t *testing.T) {
	for _, mode := range []string{"noncoherent", "coherent-checked"} {
		t.Run(mode, func(t *testing.T) {
			m := NewMemory()
			if mode == "noncoherent" {
				m.SetCoherent(false)
			} else {
				m.SetCheckOwnership(true)
			}
			if m.DMACoherent() {
				t.Fatal("memory that tracks ownership says its syncs can be skipped")
			}
			m.SetScatter(true)
			backing := make([]byte, 3*kernel.PageSize)
			buf := backing[kernel.PageSize-100 : 2*kernel.PageSize+100] // three spans
			segs, err := m.Pin(buf)
			if err != nil {
				t.Fatal(err)
			}
			if len(segs) != 3 {
				t.Fatalf("segments %+v", segs)
			}
			p1 := segs[1].Phys // the middle span, a whole page
			misuses := func() uint64 { return m.Stats().Misuses }
			write := func(p kernel.PhysAddr, n int) {
				t.Helper()
				if err := m.DeviceWrite(p, make([]byte, n)); err != nil {
					t.Fatal(err)
				}
			}
			// A fresh pin is the device's.
			write(segs[0].Phys, 100)
			write(p1, kernel.PageSize)
			// The CPU takes [100, 300) and [400, 500) of the middle span.
			m.SyncForCPU(p1+100, 200)
			m.SyncForCPU(p1+400, 100)
			write(p1, 100)
			write(p1+300, 100)
			write(p1+500, 100)
			if n := misuses(); n != 0 {
				t.Fatalf("%d misuses writing around the CPU's bytes: %v", n, m.Errors())
			}
			write(p1+50, 100) // reaches byte 100
			errs := m.Errors()
			if len(errs) != 1 || !errors.Is(errs[0], ErrCPUOwned) {
				t.Fatalf("misuses %v, want one device write to CPU-owned bytes", errs)
			}
			want := fmt.Sprintf("device write to %#x owned by the CPU since SyncForCPU, no SyncForDevice", p1+100)
			if !strings.Contains(errs[0].Error(), want) {
				t.Errorf("misuse %q does not say %q", errs[0], want)
			}
			// Handing back part of a range leaves the rest with the CPU.
			m.SyncForDevice(p1+150, 100) // CPU keeps [100, 150) and [250, 300)
			write(p1+150, 100)
			if n := misuses(); n != 1 {
				t.Fatalf("write to bytes handed back: %d misuses: %v", n, m.Errors())
			}
			write(p1+260, 1)
			write(p1+149, 1)
			write(p1+450, 1)
			if n := misuses(); n != 4 {
				t.Fatalf("writes to the bytes kept: %d misuses, want 4: %v", n, m.Errors())
			}
			// Handed back segment by segment, everything is the device's;
			// each span keeps its own bytes.
			for _, sg := range segs {
				m.SyncForDevice(sg.Phys, sg.Len)
			}
			write(p1, kernel.PageSize)
			m.SyncForCPU(segs[0].Phys+50, 50)
			write(p1, kernel.PageSize)
			if n := misuses(); n != 4 {
				t.Fatalf("writes after the hand-back: %d misuses: %v", n, m.Errors())
			}
			write(segs[0].Phys+99, 1)
			if n := misuses(); n != 5 {
				t.Fatalf("write to the first span's CPU bytes: %d misuses: %v", n, m.Errors())
			}
			// A write refused for unregistered memory records no misuse.
			if err := m.DeviceWrite(segs[2].Phys+50, make([]byte, 100)); !errors.Is(err, ErrUnregistered) {
				t.Fatalf("write past the end: %v", err)
			}
			// Another Pin of the pinned buffer (a second map, or a new one
			// while the IOMMU still holds the old) gives it all back.
			m.SyncForCPU(segs[1].Phys, 64)
			if _, err := m.Pin(buf); err != nil {
				t.Fatal(err)
			}
			write(segs[1].Phys, kernel.PageSize)
			if n := misuses(); n != 5 {
				t.Fatalf("write after a second pin: %d misuses: %v", n, m.Errors())
			}
			if err := m.Unpin(buf); err != nil {
				t.Fatal(err)
			}
			// Unpinned and pinned again: a fresh mapping, the device's.
			if err := m.Unpin(buf); err != nil {
				t.Fatal(err)
			}
			segs, err = m.Pin(buf)
			if err != nil {
				t.Fatal(err)
			}
			write(segs[1].Phys, kernel.PageSize)
			if n := misuses(); n != 5 {
				t.Fatalf("write to a fresh pin: %d misuses: %v", n, m.Errors())
			}
			if err := m.Unpin(buf); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestOwnershipCoherent: coherent memory that does not check lets the DMA
// layer skip its syncs, so it cannot know who owns what and forgets it;
// Alloc'd memory is coherent and never owned by the CPU.
func TestOwnershipCoherent(t *testing.T) {
	m := NewMemory()
	buf := make([]byte, 256)
	segs, err := m.Pin(buf)
	if err != nil {
		t.Fatal(err)
	}
	p := segs[0].Phys
	m.SyncForCPU(p, 64)
	m.DeviceWrite(p, []byte{1})
	if n := m.Stats().Misuses; n != 0 {
		t.Fatalf("coherent memory without checks counted %d misuses: %v", n, m.Errors())
	}
	// Going back to skipping forgets: the DMA layer would skip the
	// SyncForDevice that hands the bytes back.
	m.SetCheckOwnership(true)
	m.SyncForCPU(p, 64)
	m.SetCheckOwnership(false)
	if !m.DMACoherent() {
		t.Fatal("coherent memory without checks says its syncs are needed")
	}
	m.SetCheckOwnership(true)
	m.DeviceWrite(p, []byte{1})
	if n := m.Stats().Misuses; n != 0 {
		t.Fatalf("ownership kept while syncs were skipped: %d misuses: %v", n, m.Errors())
	}
	// Switching coherence keeps what is tracked in both modes.
	m.SyncForCPU(p, 64)
	m.SetCoherent(false)
	m.SetCoherent(true)
	m.DeviceWrite(p, []byte{1})
	if n := m.Stats().Misuses; n != 1 {
		t.Fatalf("ownership lost over a switch of coherence: %d misuses: %v", n, m.Errors())
	}
	r, _ := m.Alloc(64, 64)
	m.SyncForCPU(r.Phys, 64)
	m.DeviceWrite(r.Phys, []byte{1})
	if n := m.Stats().Misuses; n != 1 {
		t.Errorf("device write to coherent allocation counted as misuse: %v", m.Errors())
	}
}
