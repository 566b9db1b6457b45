package image

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// espType is the EFI system partition's type GUID as GPT stores it
// (C12A7328-F81F-11D2-BA4B-00A0C93EC93B, first three fields little-endian).
var espType = []byte{0x28, 0x73, 0x2a, 0xc1, 0x1f, 0xf8, 0xd2, 0x11, 0xba, 0x4b, 0x00, 0xa0, 0xc9, 0x3e, 0xc9, 0x3b}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.NewChaCha8([32]byte{'e', 's', 'p'}).Read(b)
	return b
}

// TestWriteDisk checks the image as firmware reads it, field by field:
// the protective MBR, the GPT header and its one ESP entry, a FAT32 boot
// sector whose cluster count makes it FAT32, and the boot program back.
func TestWriteDisk(t *testing.T) {
	// The FAT's directory entries carry the time they were made (in
	// 2-second steps), SOURCE_DATE_EPOCH's when it is set: two images
	// made a second apart differ without it.
	t.Setenv("SOURCE_DATE_EPOCH", "1767225600")
	dir := t.TempDir()
	path := filepath.Join(dir, "ether9.img")
	boot := randomBytes(12<<20 + 12345)
	if err := WriteDisk(path, boot, 0); err != nil {
		t.Fatal(err)
	}
	img, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(img)) != DiskSize(int64(len(boot))) || len(img)%mib != 0 {
		t.Errorf("image %d bytes, DiskSize says %d", len(img), DiskSize(int64(len(boot))))
	}
	le := binary.LittleEndian
	if img[510] != 0x55 || img[511] != 0xaa || img[446+4] != 0xee {
		t.Errorf("no protective MBR: signature %x, partition type %#x", img[510:512], img[446+4])
	}
	hdr := img[sector : 2*sector]
	if string(hdr[:8]) != "EFI PART" {
		t.Fatalf("no GPT header at LBA 1: %q", hdr[:8])
	}
	last := uint64(len(img)/sector - 1)
	if alt := le.Uint64(hdr[32:]); alt != last {
		t.Errorf("backup GPT header at LBA %d, want the last, %d", alt, last)
	}
	if string(img[last*sector:][:8]) != "EFI PART" {
		t.Errorf("no backup GPT header in the last sector")
	}
	entries := le.Uint64(hdr[72:])
	e := img[entries*sector:][:128]
	if !bytes.Equal(e[:16], espType) {
		t.Fatalf("partition 1 type %x, want the EFI system partition's", e[:16])
	}
	first, end := le.Uint64(e[32:]), le.Uint64(e[40:])
	if first*sector != espStart || end >= le.Uint64(hdr[48:])+1 {
		t.Errorf("ESP sectors %d..%d, want from %d within the usable range (last usable %d)", first, end, espStart/sector, le.Uint64(hdr[48:]))
	}
	bs := img[first*sector:][:sector]
	if string(bs[82:90]) != "FAT32   " || bs[510] != 0x55 || bs[511] != 0xaa {
		t.Fatalf("no FAT32 boot sector at the ESP: %q, %x", bs[82:90], bs[510:512])
	}
	bps, spc := int64(le.Uint16(bs[11:])), int64(bs[13])
	reserved, fats := int64(le.Uint16(bs[14:])), int64(bs[16])
	total, fatSize := int64(le.Uint32(bs[32:])), int64(le.Uint32(bs[36:]))
	if le.Uint16(bs[22:]) != 0 || bps != sector {
		t.Errorf("FAT16 FAT size %d, bytes/sector %d: want 0 and 512", le.Uint16(bs[22:]), bps)
	}
	if total != int64(end-first+1) {
		t.Errorf("file system of %d sectors in a partition of %d", total, end-first+1)
	}
	clusters := (total - reserved - fats*fatSize) / spc
	if clusters < 65525 {
		t.Errorf("%d clusters: below 65,525 firmware reads the volume as FAT16", clusters)
	}
	got, err := ReadBootProgram(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, boot) {
		t.Fatalf("%s read back: %d bytes, differs from the %d written", BootPath, len(got), len(boot))
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".*")); len(m) != 0 {
		t.Errorf("temporary files left: %q", m)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o644 {
		t.Errorf("image mode %v, want 0644", st.Mode().Perm())
	}

	// The same boot program makes the same image.
	again := filepath.Join(dir, "again.img")
	if err := WriteDisk(again, boot, 0); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(again); !bytes.Equal(b, img) {
		t.Errorf("two images of the same program differ")
	}
}

// TestWriteDiskTooSmall: a size that cannot hold the program is refused
// before a byte is written, and an image already there stays.
func TestWriteDiskTooSmall(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ether9.img")
	if err := os.WriteFile(path, []byte("the image from before"), 0o644); err != nil {
		t.Fatal(err)
	}
	boot := randomBytes(60 << 20)
	err := WriteDisk(path, boot, 64*mib)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
	t.Log(err)
	if b, _ := os.ReadFile(path); string(b) != "the image from before" {
		t.Errorf("the image from before was changed: %.40q", b)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".*")); len(m) != 0 {
		t.Errorf("temporary files left: %q", m)
	}
	if err := WriteDisk(filepath.Join(dir, "odd.img"), []byte("x"), DiskSize(1)+1); err == nil {
		t.Errorf("a size that is not whole sectors was accepted")
	}
}

// TestWriteDiskFailsClean: a failure after the temporary file exists (no
// such directory for the rename here: the target is a directory) leaves
// nothing behind.
func TestWriteDiskFailsClean(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "ether9.img")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(target, "keep"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteDisk(target, []byte("boot"), 0); err == nil {
		t.Fatal("renaming over a non-empty directory succeeded")
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".*")); len(m) != 0 {
		t.Errorf("temporary files left: %q", m)
	}
}

func TestDiskSize(t *testing.T) {
	for _, c := range []struct{ n, want int64 }{
		{0, 42 * mib},
		{30 * mib, 42 * mib},
		{100 * mib, 106 * mib},
	} {
		if got := DiskSize(c.n); got != c.want {
			t.Errorf("DiskSize(%d MiB) = %d MiB, want %d", c.n/mib, got/mib, c.want/mib)
		}
	}
}

// TestHardwareCmdline: the screen and the serial port at 115200, the
// serial last (it is /dev/console), and VT-d still left to ether9.
func TestHardwareCmdline(t *testing.T) {
	c, err := Cmdline("ether9.ip=10.0.2.15/24")
	if err != nil {
		t.Fatal(err)
	}
	got := HardwareCmdline(c)
	want := "console=tty0 console=ttyS0,115200n8 panic=-1 quiet intel_iommu=off intremap=off ether9.ip=10.0.2.15/24"
	if got != want {
		t.Fatalf("HardwareCmdline = %q, want %q", got, want)
	}
}

// TestWriteDiskFiles: several files, one at the root and one in a
// directory of its own beside BootPath's, each read back whole; the same
// files make the same image, and a bad file list is refused before
// anything is written.
func TestWriteDiskFiles(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1767225600")
	dir := t.TempDir()
	files := []ESPFile{
		{Path: BootPath, Data: randomBytes(400 << 10)},
		{Path: "/shim.elf", Data: randomBytes(200<<10 + 7)},
		{Path: "/init", Data: randomBytes(15 << 20)},
		{Path: "/ether9/grub.cfg", Data: []byte("menuentry 'ether9' {}\n")},
	}
	path := filepath.Join(dir, "ether9.img")
	if err := WriteDiskFiles(path, files, 0); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		got, err := ReadFile(path, f.Path)
		if err != nil {
			t.Fatalf("%s: %v", f.Path, err)
		}
		if !bytes.Equal(got, f.Data) {
			t.Errorf("%s read back: %d bytes, differs from the %d written", f.Path, len(got), len(f.Data))
		}
	}
	var n int64
	for _, f := range files {
		n += int64(len(f.Data))
	}
	if st, _ := os.Stat(path); st.Size() != DiskSize(n) {
		t.Errorf("image %d bytes, DiskSize of the files says %d", st.Size(), DiskSize(n))
	}
	img, _ := os.ReadFile(path)
	again := filepath.Join(dir, "again.img")
	if err := WriteDiskFiles(again, files, 0); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(again); !bytes.Equal(b, img) {
		t.Errorf("two images of the same files differ")
	}
	// One byte of another file changes the GUIDs with it.
	other := append([]ESPFile{}, files...)
	other[2].Data = append([]byte{}, files[2].Data...)
	other[2].Data[12345] ^= 1
	if err := WriteDiskFiles(again, other, 0); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(again); bytes.Equal(b[sector:2*sector], img[sector:2*sector]) {
		t.Errorf("images of different files share a GPT header (the disk GUID)")
	}

	for _, bad := range [][]ESPFile{
		nil,
		{{Path: "init", Data: []byte("x")}},
		{{Path: "/a/../init", Data: []byte("x")}},
		{{Path: "/init", Data: []byte("x")}, {Path: "/INIT", Data: []byte("y")}},
	} {
		p := filepath.Join(dir, "bad.img")
		if err := WriteDiskFiles(p, bad, 0); err == nil {
			t.Errorf("files %q were accepted", []ESPFile(bad))
		} else if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("files %q were refused after writing %s", []ESPFile(bad), p)
		}
	}
}
