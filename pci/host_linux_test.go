package pci_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"testing"

	upci "github.com/u-root/u-root/pkg/pci"

	"github.com/ether9/ether9/kernel/acpi"
	"github.com/ether9/ether9/pci"
)

// Linux resource flags (include/linux/ioport.h), as in sysfs resource files.
const (
	ioresourceIO       = 0x00000100
	ioresourceMem      = 0x00000200
	ioresourcePrefetch = 0x00002000
	ioresourceMem64    = 0x00100000
)

// TestHostSysfsMatchesURoot enumerates the host's own PCI functions
// through our sysfs accessor (reading config space only: the functions
// belong to the running kernel, so BARs are decoded, not sized) and
// compares ids, class and BARs with u-root's pkg/pci, which reads the
// kernel's vendor, device, class and resource files instead.
func TestHostSysfsMatchesURoot(t *testing.T) {
	ents, err := os.ReadDir(pci.SysfsRoot)
	if errors.Is(err, fs.ErrNotExist) {
		t.Skipf("host has no PCI sysfs: %s does not exist", pci.SysfsRoot)
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) == 0 {
		t.Skipf("host has no PCI functions in %s", pci.SysfsRoot)
	}

	s := pci.NewSysfs("")
	defer s.Close()
	segs, err := s.Segments()
	if err != nil {
		t.Fatal(err)
	}
	ours := map[pci.Addr]*pci.Function{}
	for _, seg := range segs {
		fns, err := pci.Enumerate(s, pci.Options{Segment: seg, AllBuses: true, NoSizing: true})
		if err != nil {
			t.Errorf("segment %04x: %v", seg, err)
		}
		for _, f := range fns {
			ours[f.Addr] = f
		}
	}

	br, err := upci.NewBusReader()
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := br.Read()
	if err != nil {
		t.Fatal(err)
	}
	if len(theirs) != len(ours) {
		t.Errorf("u-root lists %d functions, we enumerate %d", len(theirs), len(ours))
	}
	for _, d := range theirs {
		a, err := pci.ParseAddr(d.Addr)
		if err != nil {
			t.Errorf("u-root address %q: %v", d.Addr, err)
			continue
		}
		f, ok := ours[a]
		if !ok {
			t.Errorf("%v (%04x:%04x) listed by u-root, not enumerated", a, d.Vendor, d.Device)
			continue
		}
		if f.Vendor != d.Vendor || f.Device != d.Device || f.Class != d.Class {
			t.Errorf("%v: ours %04x:%04x class %06x, u-root %04x:%04x class %06x",
				a, f.Vendor, f.Device, f.Class, d.Vendor, d.Device, d.Class)
		}
		if f.IsBridge() != d.Bridge {
			t.Errorf("%v: bridge %v, u-root says %v", a, f.IsBridge(), d.Bridge)
		}
		if d.Bridge && (f.Secondary != d.Secondary || f.Subordinate != d.Subordinate) {
			t.Errorf("%v: buses %02x-%02x, u-root %02x-%02x", a, f.Secondary, f.Subordinate, d.Secondary, d.Subordinate)
		}
		for _, r := range d.BARS {
			if r.Index > 5 {
				continue // expansion ROM and SR-IOV resources
			}
			b := f.BARs[r.Index]
			want := pci.BARMem32
			switch {
			case r.Attr&ioresourceIO != 0:
				want = pci.BARIO
			case r.Attr&ioresourceMem64 != 0:
				want = pci.BARMem64
			case r.Attr&ioresourceMem == 0:
				t.Errorf("%v bar%d: resource flags %#x name neither memory nor i/o", a, r.Index, r.Attr)
				continue
			}
			if b.Kind != want || b.Addr != r.Base || b.Size != r.Lim-r.Base+1 || b.Prefetchable != (r.Attr&ioresourcePrefetch != 0) {
				t.Errorf("%v bar%d: ours %v, u-root %#x-%#x flags %#x", a, r.Index, b, r.Base, r.Lim, r.Attr)
			}
		}
		// Our MSI-X decoding against the kernel's BAR sizes.
		if c, ok := pci.FindCap(f.Caps, pci.CapMSIX); ok {
			mx, err := pci.ReadMSIX(s, a, c.Offset)
			if err != nil {
				t.Errorf("%v: %v", a, err)
			}
			if err := mx.Check(f.BARs); err != nil {
				t.Errorf("%v: %v (%+v)", a, err, mx)
			}
		}
		t.Logf("%s\n\tu-root: %s class %06x, %d BARs", f.Describe(), d.Addr, d.Class, len(d.BARS))
	}

	// Following bridges from bus 0 finds a subset (hosts with several root
	// buses have functions no bridge of bus 0 leads to).
	walked, err := pci.Enumerate(s, pci.Options{NoSizing: true})
	if err != nil {
		t.Errorf("bridge walk: %v", err)
	}
	for _, f := range walked {
		if _, ok := ours[f.Addr]; !ok {
			t.Errorf("bridge walk found %v, which is not in sysfs", f.Addr)
		}
	}
	if len(walked) == 0 && len(ours) > 0 && segs[0] == 0 {
		t.Errorf("bridge walk from bus 0 found nothing")
	}
}

// enumerateAll enumerates every bus of the given segments without sizing.
func enumerateAll(t *testing.T, c pci.Config, segs []uint16) map[pci.Addr]*pci.Function {
	t.Helper()
	out := map[pci.Addr]*pci.Function{}
	for _, seg := range segs {
		fns, err := pci.Enumerate(c, pci.Options{Segment: seg, AllBuses: true, NoSizing: true})
		if err != nil {
			t.Errorf("segment %04x: %v", seg, err)
		}
		for _, f := range fns {
			out[f.Addr] = f
		}
	}
	return out
}

// splitCaps separates standard from extended capabilities.
func splitCaps(caps []pci.Capability) (std, ext []pci.Capability) {
	for _, c := range caps {
		if c.Extended {
			ext = append(ext, c)
		} else {
			std = append(std, c)
		}
	}
	return std, ext
}

// sameFunctions compares two enumerations of the host: ids, class, BARs
// (decoded, not sized: only sysfs knows sizes without sizing) and standard
// capabilities, and extended capabilities where both accessors reached
// extended space.
func sameFunctions(t *testing.T, what string, got, want map[pci.Addr]*pci.Function) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s finds %d functions, sysfs %d", what, len(got), len(want))
	}
	for a, w := range want {
		g, ok := got[a]
		if !ok {
			t.Errorf("%s misses %v", what, a)
			continue
		}
		gstd, gext := splitCaps(g.Caps)
		wstd, wext := splitCaps(w.Caps)
		if len(gext) == 0 || len(wext) == 0 {
			gext, wext = nil, nil
		}
		gbars, wbars := g.BARs, w.BARs
		for i := range gbars {
			gbars[i].Size, wbars[i].Size = 0, 0
		}
		if g.Vendor != w.Vendor || g.Device != w.Device || g.Class != w.Class || gbars != wbars ||
			fmt.Sprint(gstd, gext) != fmt.Sprint(wstd, wext) {
			t.Errorf("%s:\n%s\nsysfs:\n%s", what, g.Describe(), w.Describe())
		}
	}
}

// TestHostECAMMatchesSysfs reads the host's configuration space through
// its MCFG windows mapped from /dev/mem, read-only, and compares with
// sysfs. ECAM has no shared address latch, so reading beside the running
// kernel is safe.
func TestHostECAMMatchesSysfs(t *testing.T) {
	tbl, err := os.ReadFile("/sys/firmware/acpi/tables/MCFG")
	if err != nil {
		t.Skipf("host has no readable MCFG table: %v", err)
	}
	mc, err := acpi.ParseMCFG(tbl)
	if err != nil {
		t.Fatalf("host MCFG: %v", err)
	}
	mem, err := pci.OpenDevMem("/dev/mem")
	if err != nil {
		t.Skipf("no /dev/mem to map ECAM through: %v", err)
	}
	defer mem.Close()
	e, err := pci.NewECAM(mc.Allocations, mem)
	if err != nil {
		t.Fatal(err)
	}
	w := mc.Allocations[0]
	if _, err := e.ReadConfig(pci.Addr{Seg: w.Segment, Bus: w.StartBus}, 0, 4); err != nil {
		t.Skipf("the kernel refuses to map ECAM (with STRICT_DEVMEM it must not claim the window: pci=nommconf): %v", err)
	}
	var segs []uint16
	for _, a := range mc.Allocations {
		if !slices.Contains(segs, a.Segment) {
			segs = append(segs, a.Segment)
		}
	}
	s := pci.NewSysfs("")
	defer s.Close()
	sameFunctions(t, "ecam", enumerateAll(t, e, segs), enumerateAll(t, s, segs))
	for _, f := range enumerateAll(t, e, segs) {
		t.Logf("ecam: %v", f.Describe())
	}
}

// TestHostPortsMatchSysfs reads the host's configuration space through the
// legacy ports. It runs only when asked (ETHER9_HOST_PORTS=1): the
// 0xcf8/0xcfc pair is shared with the running kernel's own config
// accesses, and an access of ours between its address write and data read
// would corrupt it. In ether9's own image no other user exists.
func TestHostPortsMatchSysfs(t *testing.T) {
	if os.Getenv("ETHER9_HOST_PORTS") != "1" {
		t.Skip("set ETHER9_HOST_PORTS=1 to use the legacy config ports beside the running kernel")
	}
	io, err := pci.HostPorts()
	if err != nil {
		t.Skipf("no port I/O: %v", err)
	}
	s := pci.NewSysfs("")
	defer s.Close()
	sameFunctions(t, "ports", enumerateAll(t, pci.NewPorts(io), []uint16{0}), enumerateAll(t, s, []uint16{0}))
}

// TestHostBARSizes sizes every BAR of the host through sysfs and compares
// with the kernel's resource sizes. Sizing writes BARs and turns decoding
// off meanwhile, so it runs only when asked (ETHER9_HOST_SIZE_BARS=1), on
// a machine where no driver is using the functions: ether9's own image.
func TestHostBARSizes(t *testing.T) {
	if os.Getenv("ETHER9_HOST_SIZE_BARS") != "1" {
		t.Skip("set ETHER9_HOST_SIZE_BARS=1 to size BARs of functions no driver owns")
	}
	s := pci.NewSysfs("")
	defer s.Close()
	br, err := upci.NewBusReader()
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := br.Read()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range theirs {
		a, err := pci.ParseAddr(d.Addr)
		if err != nil {
			t.Fatal(err)
		}
		bars, err := pci.ReadBARs(s, a, true)
		if err != nil {
			t.Errorf("%v: %v", a, err)
		}
		for _, r := range d.BARS {
			if r.Index > 5 {
				continue
			}
			if b := bars[r.Index]; b.Size != r.Lim-r.Base+1 || b.Addr != r.Base {
				t.Errorf("%v: sized %v, kernel %#x-%#x", a, b, r.Base, r.Lim)
			} else {
				t.Logf("%v: %v", a, b)
			}
		}
	}
}
