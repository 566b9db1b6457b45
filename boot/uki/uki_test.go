package uki

import (
	"bytes"
	"debug/pe"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// testSection is one section of a synthetic PE image.
type testSection struct {
	name string
	va   uint32
	data []byte
}

// makePE builds a PE32+ x86-64 image with its PE header at lfanew, the
// given sections (raw data after headerSize, FileAlignment 0x200) and
// SectionAlignment salign; hook edits the headers before the sections'
// bytes are laid out.
func makePE(lfanew int, salign uint32, headerSize int, secs []testSection) []byte {
	const falign = 0x200
	b := make([]byte, headerSize)
	copy(b, "MZ")
	le.PutUint32(b[dosLfanew:], uint32(lfanew))
	copy(b[lfanew:], "PE\x00\x00")
	coff := lfanew + 4
	le.PutUint16(b[coff+coffMachine:], machineAMD64)
	le.PutUint16(b[coff+coffNumSections:], uint16(len(secs)))
	le.PutUint16(b[coff+coffSizeOptHeader:], 240)
	opt := coff + coffSize
	le.PutUint16(b[opt+optMagic:], magicPE32Plus)
	le.PutUint32(b[opt+optEntry:], 0x1000)
	le.PutUint32(b[opt+optSectionAlign:], salign)
	le.PutUint32(b[opt+optFileAlign:], falign)
	le.PutUint32(b[opt+optSizeOfHeaders:], uint32(headerSize))
	le.PutUint32(b[opt+optNumRvaAndSizes:], 16)
	var end uint32
	for i, s := range secs {
		h := b[opt+240+i*sectionHeaderSize:]
		copy(h[:8], s.name)
		raw := uint32(len(b))
		rawSize := uint32(alignUp(uint64(len(s.data)), falign))
		le.PutUint32(h[secVirtualSize:], uint32(len(s.data)))
		le.PutUint32(h[secVirtualAddress:], s.va)
		le.PutUint32(h[secSizeOfRawData:], rawSize)
		le.PutUint32(h[secPointerToRaw:], raw)
		le.PutUint32(h[secCharacteristic:], 0x60000020)
		b = append(b, make([]byte, rawSize)...)
		copy(b[raw:], s.data)
		end = max(end, s.va+uint32(len(s.data)))
	}
	le.PutUint32(b[opt+optSizeOfImage:], uint32(alignUp(uint64(end), uint64(salign))))
	return b
}

// testStub is shaped like systemd's stub: small sections, 0x200 alignment.
func testStub() []byte {
	return makePE(0x80, 0x200, 0x400, []testSection{
		{".text", 0x1000, bytes.Repeat([]byte{0xc3}, 0x900)},
		{".data", 0x2000, []byte("data")},
		{".sdmagic", 0x2200, []byte("#### LoaderInfo: systemd-stub 252 ####")},
	})
}

// testKernel is shaped like a bzImage: the PE header inside the first
// sector, the boot protocol header at 0x1f1, a version string.
func testKernel() []byte {
	k := makePE(0x40, 0x1000, 0x1000, []testSection{{".text", 0x1000, bytes.Repeat([]byte{0x90}, 0x3000)}})
	copy(k[hdrMagic:], "HdrS")
	le.PutUint16(k[hdrVersion:], 0x20f)
	le.PutUint16(k[hdrKver:], 0x600)
	copy(k[0x800:], "6.1.0-57-amd64 (debian-kernel@lists.debian.org) #1 SMP\x00")
	return k
}

// load maps a PE image's sections at their RVAs, as firmware loads it
// (VirtualSize bytes each, at most SizeOfRawData of them from the file),
// and checks what a loader checks: sections ascending, inside SizeOfImage,
// not overlapping; the sections named in aligned must sit on
// SectionAlignment (systemd's own stub places .sdmagic off it).
func load(t *testing.T, img []byte, aligned ...string) (*pe.File, []byte) {
	t.Helper()
	f, err := pe.NewFile(bytes.NewReader(img))
	if err != nil {
		t.Fatalf("debug/pe cannot read the image: %v", err)
	}
	oh, ok := f.OptionalHeader.(*pe.OptionalHeader64)
	if !ok {
		t.Fatalf("not PE32+")
	}
	mem := make([]byte, oh.SizeOfImage)
	var prevEnd uint32
	for _, s := range f.Sections {
		if slices.Contains(aligned, s.Name) && (s.VirtualAddress%oh.SectionAlignment != 0 || s.Offset%oh.FileAlignment != 0 || s.Size%oh.FileAlignment != 0) {
			t.Errorf("section %s misaligned: rva %#x offset %#x size %#x", s.Name, s.VirtualAddress, s.Offset, s.Size)
		}
		if s.VirtualAddress < prevEnd {
			t.Errorf("section %s at %#x overlaps the one before (ends %#x)", s.Name, s.VirtualAddress, prevEnd)
		}
		end := s.VirtualAddress + s.VirtualSize
		if uint64(s.VirtualAddress)+uint64(s.VirtualSize) > uint64(oh.SizeOfImage) {
			t.Fatalf("section %s [%#x, %#x) beyond SizeOfImage %#x", s.Name, s.VirtualAddress, end, oh.SizeOfImage)
		}
		prevEnd = end
		data, err := s.Data()
		if err != nil {
			t.Fatalf("section %s: %v", s.Name, err)
		}
		copy(mem[s.VirtualAddress:], data[:min(len(data), int(s.VirtualSize))])
	}
	if oh.SizeOfImage%oh.SectionAlignment != 0 {
		t.Errorf("SizeOfImage %#x not a multiple of SectionAlignment", oh.SizeOfImage)
	}
	return f, mem
}

// inMemory returns a section's VirtualSize bytes from the loaded image,
// as the stub reads its sections from its own loaded image.
func inMemory(t *testing.T, f *pe.File, mem []byte, name string) []byte {
	t.Helper()
	s := f.Section(name)
	if s == nil {
		t.Fatalf("no %s section", name)
	}
	return mem[s.VirtualAddress : s.VirtualAddress+s.VirtualSize]
}

// ours are the sections Build adds.
var ours = []string{".osrel", ".cmdline", ".linux", ".initrd"}

func TestBuild(t *testing.T) {
	stub, kernel := testStub(), testKernel()
	initrd := bytes.Repeat([]byte("cpio"), 10000)
	const cmdline = "console=ttyS0,115200n8 console=tty0 intel_iommu=off intremap=off"
	img, err := Build(Parts{Stub: stub, Kernel: kernel, Initrd: initrd, Cmdline: cmdline})
	if err != nil {
		t.Fatal(err)
	}
	f, mem := load(t, img, ours...)
	var names []string
	for _, s := range f.Sections {
		names = append(names, s.Name)
	}
	if got, want := strings.Join(names, " "), ".text .data .sdmagic .osrel .cmdline .linux .initrd"; got != want {
		t.Fatalf("sections %q, want %q", got, want)
	}
	for _, c := range []struct {
		name string
		want []byte
	}{
		{".cmdline", []byte(cmdline)},
		{".linux", kernel},
		{".initrd", initrd},
		{".osrel", []byte(OSRelease("6.1.0-57-amd64"))},
		{".text", bytes.Repeat([]byte{0xc3}, 0x900)},
	} {
		if got := inMemory(t, f, mem, c.name); !bytes.Equal(got, c.want) {
			t.Errorf("%s in memory: %d bytes %.40q, want %d bytes %.40q", c.name, len(got), got, len(c.want), c.want)
		}
	}
	for _, name := range []string{".osrel", ".cmdline", ".linux", ".initrd"} {
		if va := f.Section(name).VirtualAddress; va%pageAlign != 0 {
			t.Errorf("%s at RVA %#x, not page-aligned", name, va)
		}
	}
	if !strings.Contains(string(inMemory(t, f, mem, ".osrel")), `VERSION_ID="6.1.0-57-amd64"`) {
		t.Errorf(".osrel lacks the kernel version:\n%s", inMemory(t, f, mem, ".osrel"))
	}
	oh := f.OptionalHeader.(*pe.OptionalHeader64)
	if got := Checksum(img, checksumOffset(t, img)); oh.CheckSum != got || got == 0 {
		t.Errorf("CheckSum %#x, recomputed %#x", oh.CheckSum, got)
	}
	if len(stub) != len(testStub()) || !bytes.Equal(stub, testStub()) {
		t.Errorf("Build changed the stub it was given")
	}
}

func checksumOffset(t *testing.T, img []byte) int {
	f, err := Parse(img)
	if err != nil {
		t.Fatal(err)
	}
	return f.opt + optCheckSum
}

// TestChecksumKnown checks the checksum against a sum done by hand: words
// 0x0201 and 0x0403 and a lone 0x05, the field at 4..7 skipped, plus the
// length.
func TestChecksumKnown(t *testing.T) {
	b := []byte{1, 2, 3, 4, 0xff, 0xff, 0xff, 0xff, 5}
	if got, want := Checksum(b, 4), uint32(0x0201+0x0403+0x05+9); got != want {
		t.Fatalf("Checksum = %#x, want %#x", got, want)
	}
	// The carry folds back in: 0xffff + 0x0002 = 0x0001 + carry 1 = 0x0002.
	if got, want := Checksum([]byte{0xff, 0xff, 2, 0}, 100), uint32(2+4); got != want {
		t.Fatalf("Checksum with carry = %#x, want %#x", got, want)
	}
}

// TestBuildRealStub builds with Debian's stub when it is installed and
// the cached Debian kernel when there is one.
func TestBuildRealStub(t *testing.T) {
	stub, err := os.ReadFile(DefaultStub)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and %v (tools/lib/install.sh installs systemd-boot-efi)", err)
		}
		t.Skipf("skipping: %v", err)
	}
	kernel := testKernel()
	if home, err := os.UserHomeDir(); err == nil {
		if m, _ := filepath.Glob(filepath.Join(home, ".cache/ether9/kernel/*/boot/vmlinuz-*")); len(m) > 0 {
			if k, err := os.ReadFile(m[len(m)-1]); err == nil {
				kernel = k
			}
		}
	}
	img, err := Build(Parts{Stub: stub, Kernel: kernel, Initrd: []byte("07070100"), Cmdline: "console=ttyS0"})
	if err != nil {
		t.Fatal(err)
	}
	f, mem := load(t, img, ours...)
	if got := inMemory(t, f, mem, ".linux"); !bytes.Equal(got, kernel) {
		t.Errorf(".linux differs from the kernel")
	}
	if got := string(inMemory(t, f, mem, ".cmdline")); got != "console=ttyS0" {
		t.Errorf(".cmdline %q", got)
	}
	t.Logf("stub %d bytes, kernel %d (%s): image %d bytes", len(stub), len(kernel), KernelVersion(kernel), len(img))
}

func TestCheckKernel(t *testing.T) {
	if err := CheckKernel(testKernel()); err != nil {
		t.Fatalf("bzImage with a PE header: %v", err)
	}
	noPE := testKernel()
	copy(noPE, "\xeb\x3c") // a boot sector jump where "MZ" was
	elf := append([]byte("\x7fELF\x02\x01\x01"), make([]byte, 0x400)...)
	arm := testKernel()
	le.PutUint16(arm[0x40+4+coffMachine:], 0xaa64)
	for name, k := range map[string][]byte{"no MZ": noPE, "vmlinux": elf, "arm64": arm, "short": []byte("MZ")} {
		err := CheckKernel(k)
		if !errors.Is(err, ErrNoEFIStub) {
			t.Errorf("%s: err = %v, want ErrNoEFIStub", name, err)
		}
		if _, err := Build(Parts{Stub: testStub(), Kernel: k, Initrd: []byte("x"), Cmdline: "c"}); !errors.Is(err, ErrNoEFIStub) {
			t.Errorf("%s: Build err = %v, want ErrNoEFIStub", name, err)
		}
	}
}

func TestBuildRefuses(t *testing.T) {
	full := makePE(0x80, 0x200, 0x400, []testSection{{".text", 0x1000, []byte{1}}, {".sdmagic", 0x1200, []byte("m")}})
	// No room: a header area that ends right after the section table.
	cramped := makePE(0x80, 0x200, 0x200, []testSection{{".text", 0x1000, []byte{1}}, {".sdmagic", 0x1200, []byte("m")}})
	notSystemd := makePE(0x80, 0x200, 0x400, []testSection{{".text", 0x1000, []byte{1}}})
	has := makePE(0x80, 0x200, 0x400, []testSection{{".sdmagic", 0x1000, []byte{1}}, {".linux", 0x1200, []byte{1}}})
	k := testKernel()
	for _, c := range []struct {
		name string
		p    Parts
		want string
	}{
		{"no room", Parts{Stub: cramped, Kernel: k, Initrd: []byte("x"), Cmdline: "c"}, "no room for 4 more section headers"},
		{"not systemd", Parts{Stub: notSystemd, Kernel: k, Initrd: []byte("x"), Cmdline: "c"}, "not systemd's stub"},
		{"a UKI already", Parts{Stub: has, Kernel: k, Initrd: []byte("x"), Cmdline: "c"}, "has a .linux section already"},
		{"not PE", Parts{Stub: []byte("#!/bin/sh\n"), Kernel: k, Initrd: []byte("x"), Cmdline: "c"}, "no MZ header"},
		{"no initrd", Parts{Stub: full, Kernel: k, Cmdline: "c"}, "empty initramfs"},
		{"two lines", Parts{Stub: full, Kernel: k, Initrd: []byte("x"), Cmdline: "a\nb"}, "want one non-empty line"},
	} {
		_, err := Build(c.p)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
}

// TestAppendDropsSignature: a signed stub's certificate table would not
// match the changed image; the directory entry goes.
func TestAppendDropsSignature(t *testing.T) {
	stub := testStub()
	dd := 0x80 + 4 + coffSize + optDataDirs + 8*ddSecurity
	le.PutUint32(stub[dd:], uint32(len(stub)))
	le.PutUint32(stub[dd+4:], 8)
	stub = append(stub, make([]byte, 8)...)
	f, err := Parse(stub)
	if err != nil {
		t.Fatal(err)
	}
	out, err := f.Append(0, AddSection{".cmdline", []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	if le.Uint64(out[dd:]) != 0 {
		t.Fatalf("certificate table kept: %#x", le.Uint64(out[dd:]))
	}
}

// TestAppendAfterLargeVirtualSize: a section whose VirtualSize exceeds
// its raw data (.bss-like) ends where its VirtualSize says; the next
// section must start past it.
func TestAppendAfterLargeVirtualSize(t *testing.T) {
	stub := testStub()
	h := 0x80 + 4 + coffSize + 240 + 2*sectionHeaderSize // .sdmagic, the last
	le.PutUint32(stub[h+secVirtualSize:], 0x5000)
	f, err := Parse(stub)
	if err != nil {
		t.Fatal(err)
	}
	out, err := f.Append(0, AddSection{".cmdline", []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := load(t, out, ".cmdline")
	if va := g.Section(".cmdline").VirtualAddress; va < 0x2200+0x5000 {
		t.Fatalf(".cmdline at %#x inside .sdmagic's memory (ends %#x)", va, 0x7200)
	}
}

func FuzzParseAppend(f *testing.F) {
	f.Add(testStub())
	f.Add(testKernel())
	f.Add([]byte("MZ"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := Parse(b)
		if err != nil {
			return
		}
		for _, s := range p.Sections {
			p.Data(s)
		}
		out, err := p.Append(0, AddSection{".cmdline", []byte("console=ttyS0")})
		if err != nil {
			return
		}
		q, err := Parse(out)
		if err != nil {
			t.Fatalf("Append made an image Parse refuses: %v", err)
		}
		s, ok := q.Section(".cmdline")
		if !ok {
			t.Fatalf(".cmdline lost")
		}
		if d, err := q.Data(s); err != nil || string(d) != "console=ttyS0" {
			t.Fatalf(".cmdline: %q, %v", d, err)
		}
		CheckKernel(b)
		KernelVersion(b)
	})
}
