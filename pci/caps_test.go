package pci

import (
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"testing"
)

func le16(v uint16) []byte { return binary.LittleEndian.AppendUint16(nil, v) }
func le32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }

// nicFn is an 82574-like endpoint: PM, MSI, PCI Express and MSI-X, then
// AER and a serial number in extended space.
func nicFn() *fakeFn {
	f := newFakeFn(0x8086, 0x10d3, 0x020000, HeaderNormal)
	f.bar(0, BARMem32, 0x20000, 0xfebc0000, false)
	f.bar(3, BARMem32, 0x4000, 0xfebe0000, false)
	f.cap(CapPM, slices.Concat(le16(0x0002|pmcD1|0x1f<<pmcPMEShift), le16(3)))                   // v2, D1, PME from all, in D3hot
	f.cap(CapMSI, slices.Concat(le16(msiCtl64Bit|2<<msiCtlMMCShift), make([]byte, 10)))          // 64-bit, 4 vectors
	f.cap(CapPCIe, slices.Concat(le16(0x0002), le32(0x1), le16(0x2<<5|0x2<<12), make([]byte, 2), // v2 endpoint, 256 B MPS
		le32(0x11|1<<4), make([]byte, 2), le16(0x1|1<<4))) // link 2.5 GT/s x1
	f.cap(CapMSIX, slices.Concat(le16(msixCtlEnable|4), le32(0x0000|3), le32(0x2000|3))) // 5 entries in bar3
	f.extCap(0x100, ExtCapAER, 1)
	f.extCap(0x140, ExtCapDSN, 1)
	return f
}

func TestCapabilities(t *testing.T) {
	bus := newFakeBus()
	bus.add(fnA, nicFn())
	caps, err := Capabilities(bus, fnA)
	if err != nil {
		t.Fatal(err)
	}
	want := []Capability{
		{ID: CapPM, Offset: 0x40}, {ID: CapMSI, Offset: 0x48}, {ID: CapPCIe, Offset: 0x58},
		{ID: CapMSIX, Offset: 0x6c},
		{ID: ExtCapAER, Offset: 0x100, Extended: true}, {ID: ExtCapDSN, Offset: 0x140, Extended: true},
	}
	if !slices.Equal(caps, want) {
		t.Fatalf("caps\n got %v\nwant %v", caps, want)
	}
	if c, ok := FindExtCap(caps, ExtCapDSN); !ok || c.Offset != 0x140 {
		t.Errorf("FindExtCap(DSN) = %v, %v", c, ok)
	}
	if _, ok := FindCap(caps, ExtCapDSN); ok {
		t.Errorf("FindCap found an extended id among standard capabilities")
	}

	pm, err := ReadPM(bus, fnA, 0x40)
	if err != nil || pm != (PM{Offset: 0x40, Version: 2, D1: true, PMEFrom: 0x1f, State: 3}) {
		t.Errorf("pm %+v, %v", pm, err)
	}
	msi, err := ReadMSI(bus, fnA, 0x48)
	if err != nil || msi != (MSI{Offset: 0x48, Vectors: 4, Allocated: 1, Addr64: true}) {
		t.Errorf("msi %+v, %v", msi, err)
	}
	pcie, err := ReadPCIe(bus, fnA, 0x58)
	if err != nil || pcie != (PCIe{Offset: 0x58, Version: 2, Type: PortEndpoint, MaxPayload: 256, Payload: 512, MaxReadReq: 512,
		LinkSpeed: 1, LinkWidth: 1, CurSpeed: 1, CurWidth: 1}) {
		t.Errorf("pcie %+v, %v", pcie, err)
	}
	msix, err := ReadMSIX(bus, fnA, 0x6c)
	if err != nil {
		t.Fatal(err)
	}
	if want := (MSIX{Offset: 0x6c, Enabled: true, TableSize: 5, TableBIR: 3, TableOffset: 0, PBABIR: 3, PBAOffset: 0x2000}); msix != want {
		t.Errorf("msix %+v, want %+v", msix, want)
	}
	bars, err := ReadBARs(bus, fnA, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := msix.Check(bars); err != nil {
		t.Errorf("msi-x inside bar3: %v", err)
	}
	bars[3].Size = 0x2004
	if err := msix.Check(bars); err == nil || !strings.Contains(err.Error(), "pba") {
		t.Errorf("pba past the end of bar3: %v", err)
	}
	msix.TableBIR = 1
	if err := msix.Check(bars); err == nil || !strings.Contains(err.Error(), "not a memory BAR") {
		t.Errorf("table in an absent BAR: %v", err)
	}
}

func TestSetD0(t *testing.T) {
	bus := newFakeBus()
	f := bus.add(fnA, nicFn())
	f.mask(0x44, 2, pmcsrStateMask|pmcsrPMEEnable)
	binary.LittleEndian.PutUint16(f.w1c[0x44:], pmcsrPMEStatus)
	f.put(0x44, 2, 3|pmcsrPMEStatus)
	prev, err := SetD0(bus, fnA, 0x40)
	if err != nil || prev != 3 {
		t.Fatalf("SetD0 = %d, %v", prev, err)
	}
	pm, _ := ReadPM(bus, fnA, 0x40)
	if pm.State != 0 || !pm.PMEStatus {
		t.Errorf("after SetD0: %+v (state must be D0, PME status not cleared as a side effect)", pm)
	}
}

func TestCapabilitiesMalformed(t *testing.T) {
	tests := []struct {
		name     string
		setup    func(f *fakeFn)
		want     string
		wantCaps int
	}{
		{"loop to itself", func(f *fakeFn) {
			off := f.cap(CapPM, make([]byte, 6))
			f.cfg[off+1] = byte(off)
		}, "loops", 1},
		{"loop of two", func(f *fakeFn) {
			a := f.cap(CapPM, make([]byte, 6))
			f.cap(CapMSI, make([]byte, 10))
			f.cfg[f.lastCap+1] = byte(a)
		}, "loops", 2},
		{"pointer into the header", func(f *fakeFn) {
			off := f.cap(CapPM, make([]byte, 6))
			f.cfg[off+1] = 0x10
		}, "inside the header", 1},
		{"extended loop", func(f *fakeFn) {
			f.cap(CapPCIe, make([]byte, 58))
			f.extCap(0x100, ExtCapAER, 1)
			f.extCap(0x200, ExtCapVC, 1)
			f.put(0x200, 4, f.get(0x200, 4)|0x100<<20)
		}, "loops", 3},
		{"extended pointer below 0x100", func(f *fakeFn) {
			f.cap(CapPCIe, make([]byte, 58))
			f.extCap(0x100, ExtCapAER, 1)
			f.put(0x100, 4, f.get(0x100, 4)|0x40<<20)
		}, "below 0x100", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bus := newFakeBus()
			f := bus.add(fnA, newFakeFn(0x8086, 0x10d3, 0x020000, HeaderNormal))
			tt.setup(f)
			caps, err := Capabilities(bus, fnA)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
			if len(caps) != tt.wantCaps {
				t.Errorf("kept %d capabilities (%v), want %d", len(caps), caps, tt.wantCaps)
			}
		})
	}
}

// Extended space is walked only for PCI Express functions and only when
// the accessor reaches it.
func TestExtendedCapsReach(t *testing.T) {
	bus := newFakeBus()
	conventional := newFakeFn(0x8086, 0x100e, 0x020000, HeaderNormal)
	conventional.cap(CapPM, make([]byte, 6))
	conventional.put(0x100, 4, 0xdeadbeef) // junk a conventional device may return
	bus.add(fnA, conventional)
	caps, err := Capabilities(bus, fnA)
	if err != nil || len(caps) != 1 {
		t.Errorf("conventional function: %v, %v", caps, err)
	}

	bus.add(fnA, nicFn())
	bus.limit = ConfigSize
	caps, err = Capabilities(bus, fnA)
	if err != nil {
		t.Fatalf("256-byte accessor: %v", err)
	}
	if _, ok := FindExtCap(caps, ExtCapAER); ok || len(caps) != 4 {
		t.Errorf("256-byte accessor found %v", caps)
	}
}

func TestReadMSIXReservedBIR(t *testing.T) {
	bus := newFakeBus()
	f := bus.add(fnA, newFakeFn(0x8086, 0x10d3, 0x020000, HeaderNormal))
	off := f.cap(CapMSIX, slices.Concat(le16(0), le32(6), le32(0)))
	if _, err := ReadMSIX(bus, fnA, off); err == nil || !strings.Contains(err.Error(), "reserved BAR indicator") {
		t.Errorf("BIR 6: %v", err)
	}
	if _, err := ReadMSIX(bus, Addr{Bus: 9}, off); !errors.Is(err, ErrAbsent) {
		t.Errorf("absent function: %v", err)
	}
	bus.limit = 0x40
	if _, err := ReadMSIX(bus, fnA, off); !errors.Is(err, ErrOutOfRange) {
		t.Errorf("unreachable capability: %v", err)
	}
}
