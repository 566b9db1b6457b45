package iommu

import (
	"errors"
	"fmt"
	"testing"

	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/vtd"
)

// brokenMem is sim memory that can refuse allocations and report pinned
// buffers in segments that cannot sit back to back.
type brokenMem struct {
	*sim.Memory
	allocsLeft int // Alloc fails once this reaches 0; negative: never
	badSegs    bool
}

func (b *brokenMem) Alloc(size, align int) (kernel.Region, error) {
	if b.allocsLeft == 0 {
		return kernel.Region{}, fmt.Errorf("injected: %w", kernel.ErrNoMemory)
	}
	if b.allocsLeft > 0 {
		b.allocsLeft--
	}
	return b.Memory.Alloc(size, align)
}

func (b *brokenMem) Pin(buf []byte) ([]kernel.Segment, error) {
	segs, err := b.Memory.Pin(buf)
	if err != nil || !b.badSegs || len(segs) < 2 {
		return segs, err
	}
	// Move the second segment's start into its page.
	segs[1].Phys += 8
	segs[1].Len -= 8
	segs[0].Len += 8
	return segs, nil
}

func brokenRig(t *testing.T) (*rig, *brokenMem) {
	m, err := sim.New(sim.Config{VTd: vtd.QEMU()})
	if err != nil {
		t.Fatal(err)
	}
	bm := &brokenMem{Memory: m.Mem, allocsLeft: -1}
	if err := m.Bus.Add(devA, &dmaDevice{cfg: sim.NewConfigSpace(0x8086, 0x10d3, 0x020000, 0)}); err != nil {
		t.Fatal(err)
	}
	if err := m.Bus.WriteConfig(devA, 4, 2, sim.CmdMemory|sim.CmdBusMaster); err != nil {
		t.Fatal(err)
	}
	u, err := New(m.VTdRegs(), bm, Options{Clock: m.Clock, IOVALimit: 64 << 20, NoLargePages: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := u.Enable(); err != nil {
		t.Fatal(err)
	}
	return &rig{t: t, m: m, u: u}, bm
}

func TestBadInput(t *testing.T) {
	r, _ := brokenRig(t)
	d := r.domain(devA)
	buf := make([]byte, 3000)
	addr, err := d.Map(buf, kernel.ToDevice)
	if err != nil {
		t.Fatal(err)
	}
	coh, err := d.AllocCoherent(100)
	if err != nil {
		t.Fatal(err)
	}
	before := r.u.Stats()
	cases := []struct {
		name string
		do   func() error
		want error
	}{
		{"map zero length", func() error { _, err := d.Map(nil, kernel.ToDevice); return err }, kernel.ErrZeroLength},
		{"map bad direction", func() error { _, err := d.Map(make([]byte, 8), 0); return err }, kernel.ErrBadAddress},
		{"coherent zero", func() error { _, err := d.AllocCoherent(0); return err }, kernel.ErrZeroLength},
		{"unmap never mapped", func() error { return d.Unmap(0x7000_0000, 100, kernel.ToDevice) }, kernel.ErrNotMapped},
		{"unmap inside a mapping", func() error { return d.Unmap(addr+8, 100, kernel.ToDevice) }, kernel.ErrNotMapped},
		{"unmap wrong size", func() error { return d.Unmap(addr, 4096, kernel.ToDevice) }, kernel.ErrBadAddress},
		{"unmap wrong direction", func() error { return d.Unmap(addr, 3000, kernel.FromDevice) }, kernel.ErrBadAddress},
		{"unmap coherent", func() error { return d.Unmap(coh.Addr, 100, kernel.Bidirectional) }, kernel.ErrBadAddress},
		{"free streaming", func() error {
			return d.FreeCoherent(kernel.Coherent{Buf: make([]byte, 3000), Addr: addr})
		}, kernel.ErrBadAddress},
		{"free coherent wrong size", func() error {
			return d.FreeCoherent(kernel.Coherent{Buf: coh.Buf[:50], Addr: coh.Addr})
		}, kernel.ErrBadAddress},
		{"sync unmapped", func() error { return d.SyncForCPU(0x7000_0000, 64, kernel.FromDevice) }, kernel.ErrNotMapped},
		{"sync past the end", func() error { return d.SyncForCPU(addr, 8192, kernel.ToDevice) }, kernel.ErrNotMapped},
		{"sync zero", func() error { return d.SyncForDevice(addr, 0, kernel.ToDevice) }, kernel.ErrZeroLength},
		{"sync bad direction", func() error { return d.SyncForDevice(addr, 10, 7) }, kernel.ErrBadAddress},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.do()
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
			t.Log(err)
		})
	}
	after := r.u.Stats()
	if after.MappedPages != before.MappedPages || after.IOVAInUse != before.IOVAInUse || after.Unmaps != before.Unmaps {
		t.Errorf("bad calls changed state:\n before %+v\n after  %+v", before, after)
	}
	// The good mapping is intact and can still be undone.
	r.mustTranslate(devA, uint64(addr), false, r.segs(buf)[0].Phys, "surviving mapping")
	if err := d.Unmap(addr, len(buf), kernel.ToDevice); err != nil {
		t.Fatal(err)
	}
	if err := d.Unmap(addr, len(buf), kernel.ToDevice); !errors.Is(err, kernel.ErrNotMapped) {
		t.Errorf("second unmap: %v", err)
	}
	if err := d.FreeCoherent(coh); err != nil {
		t.Fatal(err)
	}
}

// TestMapFailureRollsBack makes a table page allocation fail in the middle
// of a mapping: no page of it may translate, no IOVA may stay allocated,
// and the buffer must be unpinned.
func TestMapFailureRollsBack(t *testing.T) {
	// 600 pages from IOVA 0x1000 need a level-3, a level-2 and two
	// level-1 tables; fail each in turn. The last failure comes after 511
	// leaves were written.
	for allowed := 0; allowed < 4; allowed++ {
		t.Run(fmt.Sprintf("after %d table pages", allowed), func(t *testing.T) {
			r, bm := brokenRig(t)
			d := r.domain(devA)
			r.m.Mem.SetScatter(true)
			before := r.u.Stats()
			pinsBefore := r.m.Mem.Stats()
			buf := make([]byte, 600*kernel.PageSize) // crosses a 2 MiB table boundary
			bm.allocsLeft = allowed
			_, err := d.Map(buf, kernel.FromDevice)
			if !errors.Is(err, kernel.ErrNoMemory) {
				t.Fatalf("map with table allocation failing: %v", err)
			}
			bm.allocsLeft = -1
			after := r.u.Stats()
			if after.MappedPages != before.MappedPages || after.IOVAInUse != before.IOVAInUse || after.Maps != before.Maps {
				t.Errorf("failed map left state behind:\n before %+v\n after  %+v", before, after)
			}
			ms := r.m.Mem.Stats()
			if ms.Pins-pinsBefore.Pins != ms.Unpins-pinsBefore.Unpins {
				t.Errorf("pins %d, unpins %d: buffer left pinned", ms.Pins-pinsBefore.Pins, ms.Unpins-pinsBefore.Unpins)
			}
			// Where the mapping would have gone, nothing translates.
			for p := uint64(0x1000); p < 0x1000+600*kernel.PageSize; p += kernel.PageSize {
				r.mustFault(devA, p, false, "after a failed map")
			}
			// And the same map succeeds once memory is back.
			addr, err := d.Map(buf, kernel.FromDevice)
			if err != nil {
				t.Fatal(err)
			}
			if addr != 0x1000 {
				t.Errorf("mapped at %#x, want the first free IOVA 0x1000", addr)
			}
		})
	}
}

func TestUnalignedSegments(t *testing.T) {
	r, bm := brokenRig(t)
	r.m.Mem.SetScatter(true)
	bm.badSegs = true
	d := r.domain(devA)
	before := r.u.Stats()
	buf := make([]byte, 2*kernel.PageSize)
	if _, err := d.Map(buf, kernel.ToDevice); !errors.Is(err, kernel.ErrUnaligned) {
		t.Fatalf("map of segments with a gap inside a page: %v", err)
	}
	if s := r.u.Stats(); s.IOVAInUse != before.IOVAInUse || s.Maps != before.Maps {
		t.Errorf("state changed: %+v", s)
	}
	if ms := r.m.Mem.Stats(); ms.Pins != ms.Unpins {
		t.Errorf("buffer left pinned: %d pins, %d unpins", ms.Pins, ms.Unpins)
	}
}

// TestIOVAExhaustion fills a small IOVA space: the map that does not fit
// fails with ErrNoIOVASpace and changes nothing; freeing makes room.
func TestIOVAExhaustion(t *testing.T) {
	r := newRig(t, sim.Config{VTd: vtd.QEMU()}, Options{IOVALimit: 64 * kernel.PageSize})
	d := r.domain(devA)
	type m struct {
		addr kernel.DMAAddr
		buf  []byte
	}
	var live []m
	for {
		buf := make([]byte, 4*kernel.PageSize)
		addr, err := d.Map(buf, kernel.ToDevice)
		if errors.Is(err, kernel.ErrNoIOVASpace) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		live = append(live, m{addr, buf})
	}
	// Page 0 is never used, so 63 pages hold 15 four-page buffers.
	if len(live) != 15 {
		t.Errorf("%d buffers fit, want 15", len(live))
	}
	s := r.u.Stats()
	if s.MappedPages != 60 {
		t.Errorf("%d pages mapped, want 60", s.MappedPages)
	}
	if ms := r.m.Mem.Stats(); ms.Pins-ms.Unpins != 15 {
		t.Errorf("%d buffers pinned, want 15", ms.Pins-ms.Unpins)
	}
	if err := d.Unmap(live[3].addr, 4*kernel.PageSize, kernel.ToDevice); err != nil {
		t.Fatal(err)
	}
	addr, err := d.Map(make([]byte, 4*kernel.PageSize), kernel.ToDevice)
	if err != nil || addr != live[3].addr {
		t.Errorf("after freeing one: %#x, %v; want %#x", addr, err, live[3].addr)
	}
}

func TestDomainsAreSeparate(t *testing.T) {
	r := qemuRig(t)
	a, b := r.domain(devA), r.domain(devB)
	if a.ID() == b.ID() || a.ID() == 0 || b.ID() == 0 {
		t.Fatalf("domain ids %d and %d", a.ID(), b.ID())
	}
	if again := r.domain(devA); again != a {
		t.Error("second Domain call for the same device made a new domain")
	}
	buf := make([]byte, kernel.PageSize)
	addr, err := a.Map(buf, kernel.Bidirectional)
	if err != nil {
		t.Fatal(err)
	}
	r.mustTranslate(devA, uint64(addr), true, r.segs(buf)[0].Phys, "owner")
	r.mustFault(devB, uint64(addr), false, "another device, same IOVA")
	if err := r.m.Port(devB).Write(uint64(addr), []byte{1}); err == nil {
		t.Error("device B wrote into device A's buffer")
	}
}
