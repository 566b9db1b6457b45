package iommu

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/vtd"
	"github.com/ether9/ether9/pci"
)

// cmRig is the QEMU unit with caching mode on (CAP.CM, as under QEMU's
// caching-mode=on): it also caches not-present root, context and leaf
// entries until software invalidates them.
func cmRig(t testing.TB, aw int, opt Options) *rig {
	t.Helper()
	cfg := vtd.QEMU()
	cfg.AddrWidth = aw
	cfg.CachingMode = true
	r := newRig(t, sim.Config{VTd: cfg}, opt)
	if !r.u.Caps().CM {
		t.Fatalf("caps %v: caching mode off", r.u.Caps())
	}
	return r
}

// mustFaultFor checks that the model refuses a DMA by a at iova for the
// given reason: which entry stopped the walk tells a stale cached context
// from a missing leaf.
func (r *rig) mustFaultFor(a pci.Addr, iova uint64, write bool, want vtd.Reason, why string) {
	r.t.Helper()
	p, err := r.translate(a, iova, write)
	var f *vtd.Fault
	switch {
	case err == nil:
		r.t.Fatalf("%s: iova %#x (write %v) translates to %#x, want a fault (%v)", why, iova, write, p, want)
	case !errors.As(err, &f):
		r.t.Fatalf("%s: iova %#x: %v is not a translation fault", why, iova, err)
	case f.Reason != want:
		r.t.Fatalf("%s: iova %#x (write %v) faults with %v, want %v", why, iova, write, f.Reason, want)
	}
	r.m.VTd.ClearFaultLog()
}

// dmaThrough has the device write a pattern at addr+off through its port
// and checks that it landed in buf[off:], then reads it back (the model's
// units lack CAP.ZLR, so every mapping grants read). It returns the
// pattern's length; no byte of it is zero.
func (r *rig) dmaThrough(a pci.Addr, addr kernel.DMAAddr, buf []byte, off int, why string) int {
	r.t.Helper()
	pat := []byte(fmt.Sprintf("%s @%#x", why, uint64(addr)+uint64(off)))
	pat = pat[:min(len(pat), len(buf)-off)]
	port := r.m.Port(a)
	if err := port.Write(uint64(addr)+uint64(off), pat); err != nil {
		r.t.Fatalf("%s: device write at %#x: %v", why, uint64(addr)+uint64(off), err)
	}
	if !bytes.Equal(buf[off:off+len(pat)], pat) {
		r.t.Fatalf("%s: device wrote %q at %#x, buffer holds %q there", why, pat, uint64(addr)+uint64(off), buf[off:off+len(pat)])
	}
	got := make([]byte, len(pat))
	if err := port.Read(uint64(addr)+uint64(off), got); err != nil || !bytes.Equal(got, pat) {
		r.t.Fatalf("%s: device read back %q, %v; want %q", why, got, err, pat)
	}
	return len(pat)
}

// TestCachingModeAttachMapUnmap runs a caching-mode unit through a
// device's life: DMA before attach (the unit caches the absent root and
// context entries), attach, DMA to IOVAs not yet mapped (cached as
// not-present leaves), maps over them with 4 KiB and 2 MiB leaves, DMA
// through, unmap, remap of the same IOVA, a device beside it on the same
// bus, and one attached while translation is off and brought in by the
// next Enable. It fails if attaching skips the context-cache invalidation
// or a map skips the IOTLB invalidation that caching mode needs for
// entries that were not present.
func TestCachingModeAttachMapUnmap(t *testing.T) {
	for _, c := range []struct {
		name   string
		aw     int
		levels int
	}{{"4-level", 48, 4}, {"3-level", 39, 3}} {
		t.Run(c.name, func(t *testing.T) {
			r := cmRig(t, c.aw, Options{Levels: c.levels})
			const first = kernel.PageSize // the allocator's lowest IOVA

			// Before attach the bus has no root entry; the unit caches
			// that.
			r.mustFaultFor(devA, first, true, vtd.ReasonRootNotPresent, "before attach")
			if n := r.m.VTd.Stats().CachedContexts; n != 1 {
				t.Fatalf("model caches %d context entries after a fault on an absent root entry, want 1: caching mode is not modelled", n)
			}
			d := r.domain(devA)
			if again := r.domain(devA); again != d {
				t.Fatal("a second Domain call for the same device made a new domain")
			}
			// Attached: the walk now reaches the empty table, and caches
			// each not-present leaf it finds.
			for p := uint64(first); p < first+4*kernel.PageSize; p += kernel.PageSize {
				r.mustFaultFor(devA, p, false, vtd.ReasonRead, "attached, nothing mapped (a context entry cached as not present is stale)")
			}
			buf := make([]byte, 3*kernel.PageSize)
			addr, err := d.Map(buf, kernel.Bidirectional)
			if err != nil {
				t.Fatal(err)
			}
			if uint64(addr)&^(kernel.PageSize-1) != first {
				t.Fatalf("first map at %#x, want IOVA %#x, the one probed", addr, first)
			}
			segs := r.segs(buf)
			for o := 0; o < len(buf); o += kernel.PageSize {
				r.mustTranslate(devA, uint64(addr)+uint64(o), true, physOf(segs, o), "mapped over cached not-present leaves (stale unless the map invalidates them)")
			}
			r.dmaThrough(devA, addr, buf, len(buf)-100, "map")

			// Unmap: the leaves go, and the faults cache them as not
			// present again; the next map reuses the IOVA.
			if err := d.Unmap(addr, len(buf), kernel.Bidirectional); err != nil {
				t.Fatal(err)
			}
			for o := 0; o < len(buf); o += kernel.PageSize {
				r.mustFaultFor(devA, uint64(addr)+uint64(o), true, vtd.ReasonWrite, "after unmap")
			}
			buf2 := make([]byte, kernel.PageSize)
			addr2, err := d.Map(buf2, kernel.FromDevice)
			if err != nil {
				t.Fatal(err)
			}
			if uint64(addr2)&^(kernel.PageSize-1) != first {
				t.Fatalf("remap at %#x, want the freed IOVA %#x", addr2, first)
			}
			r.mustTranslate(devA, uint64(addr2), true, physOf(r.segs(buf2), 0), "remapped IOVA")
			r.dmaThrough(devA, addr2, buf2, 0, "remap")

			// A 2 MiB leaf over a range whose 4 KiB pages were cached
			// as not present.
			for _, p := range []uint64{largeSize, 2*largeSize - kernel.PageSize} {
				r.mustFaultFor(devA, p, false, vtd.ReasonRead, "before the 2 MiB map")
			}
			coh, err := d.AllocCoherent(largeSize)
			if err != nil {
				t.Fatal(err)
			}
			if coh.Addr != largeSize {
				t.Fatalf("2 MiB coherent allocation at %#x, want %#x", coh.Addr, largeSize)
			}
			if _, _, left, _ := d.pt.lookup(uint64(coh.Addr)); left != largeSize {
				t.Fatalf("2 MiB allocation at %#x not on a 2 MiB leaf", coh.Addr)
			}
			r.dmaThrough(devA, coh.Addr, coh.Buf, 0, "2M start")
			r.dmaThrough(devA, coh.Addr, coh.Buf, largeSize-kernel.PageSize, "2M end")

			// A device on a bus with no root entry, and one beside devA
			// whose context entry alone is absent.
			devC := pci.Addr{Bus: devA.Bus, Dev: devA.Dev + 1}
			r.mustFaultFor(devB, first, true, vtd.ReasonRootNotPresent, "devB before attach")
			r.mustFaultFor(devC, first, true, vtd.ReasonContextNotPresent, "devC before attach")
			for _, a := range []pci.Addr{devB, devC} {
				da := r.domain(a)
				b := make([]byte, kernel.PageSize)
				addr, err := da.Map(b, kernel.FromDevice)
				if err != nil {
					t.Fatal(err)
				}
				r.mustTranslate(a, uint64(addr), true, physOf(r.segs(b), 0), fmt.Sprintf("%v attached after a cached fault", a))
				if a == devB {
					r.dmaThrough(devB, addr, b, 0, "devB")
				}
			}

			// Attach while translation is off: Domain writes the entry
			// without invalidating, and Enable must drop the cached
			// not-present context before turning translation on.
			devD := pci.Addr{Bus: 7, Dev: 1, Fn: 2}
			r.mustFaultFor(devD, first, false, vtd.ReasonRootNotPresent, "devD before attach")
			if err := r.u.Disable(); err != nil {
				t.Fatal(err)
			}
			if p, err := r.translate(devA, 0x1234000, false); err != nil || p != 0x1234000 {
				t.Fatalf("translation off: %#x, %v; want untranslated", p, err)
			}
			dd := r.domain(devD)
			b := make([]byte, kernel.PageSize)
			addrD, err := dd.Map(b, kernel.ToDevice)
			if err != nil {
				t.Fatal(err)
			}
			if err := r.u.Enable(); err != nil {
				t.Fatal(err)
			}
			r.mustTranslate(devD, uint64(addrD), false, physOf(r.segs(b), 0), "attached while off, after Enable")
			r.mustTranslate(devA, uint64(addr2), true, physOf(r.segs(buf2), 0), "devA's mapping after Disable and Enable")
			r.dmaThrough(devA, coh.Addr, coh.Buf, 12345, "2M after Enable")
			r.mustFaultFor(devA, uint64(addr)+2*kernel.PageSize, false, vtd.ReasonRead, "devA's unmapped page after Enable")

			if err := d.Unmap(addr2, len(buf2), kernel.FromDevice); err != nil {
				t.Fatal(err)
			}
			r.mustFaultFor(devA, uint64(addr2), true, vtd.ReasonWrite, "after the last unmap")
			if err := d.FreeCoherent(coh); err != nil {
				t.Fatal(err)
			}
			r.mustFaultFor(devA, uint64(coh.Addr), true, vtd.ReasonWrite, "after FreeCoherent")
		})
	}
}
