package image

import (
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz/lzma"
)

// A bzImage is real-mode setup code followed by a small decompressor and
// the compressed kernel (its payload). QEMU can boot the uncompressed
// vmlinux ELF directly through its PVH entry point, skipping a
// decompression that costs seconds under TCG; this file gets that vmlinux
// out of a bzImage, as the kernel's scripts/extract-vmlinux does, but by
// reading the boot protocol header instead of guessing.

// Boot protocol header fields (Documentation/arch/x86/boot.rst).
const (
	hdrSetupSects    = 0x1f1
	hdrMagic         = 0x202 // "HdrS"
	hdrVersion       = 0x206
	hdrPayloadOffset = 0x248 // from the protected-mode code, protocol 2.08+
	hdrPayloadLength = 0x24c
	hdrEnd           = 0x250

	// maxKernelSize bounds a decompressed kernel, so a corrupt size field
	// cannot make us allocate gigabytes.
	maxKernelSize = 1 << 30
)

// ErrNoPVH says that an ELF kernel has no PVH entry note, so QEMU cannot
// boot it with -kernel.
var ErrNoPVH = errors.New("no PVH entry note (XEN_ELFNOTE_PHYS32_ENTRY): kernel built without CONFIG_PVH")

// IsBzImage reports whether k starts with an x86 boot protocol header.
func IsBzImage(k []byte) bool {
	return len(k) >= hdrEnd && string(k[hdrMagic:hdrMagic+4]) == "HdrS"
}

// Payload returns the compressed kernel inside a bzImage.
func Payload(k []byte) ([]byte, error) {
	if !IsBzImage(k) {
		return nil, fmt.Errorf("bzImage: no boot protocol header")
	}
	if v := binary.LittleEndian.Uint16(k[hdrVersion:]); v < 0x208 {
		return nil, fmt.Errorf("bzImage: boot protocol %d.%02d has no payload fields (need 2.08)", v>>8, v&0xff)
	}
	setup := int(k[hdrSetupSects])
	if setup == 0 {
		setup = 4
	}
	pm := (setup + 1) * 512
	off := uint64(pm) + uint64(binary.LittleEndian.Uint32(k[hdrPayloadOffset:]))
	n := uint64(binary.LittleEndian.Uint32(k[hdrPayloadLength:]))
	if n < 8 || off+n > uint64(len(k)) {
		return nil, fmt.Errorf("bzImage: payload [%#x, +%#x) lies outside the %d-byte file", off, n, len(k))
	}
	return k[off : off+n], nil
}

// compression is one format the kernel may compress itself with.
type compression struct {
	name   string
	magic  []byte
	decode func(stream []byte, size int) ([]byte, error)
}

// compressions are tried by magic at the start of the payload; lzo and
// lz4 are recognised so that the error names them.
var compressions = []compression{
	{"gzip", []byte{0x1f, 0x8b}, decodeGzip},
	{"xz", xzMagic, func(s []byte, _ int) ([]byte, error) { return unxz(s) }},
	{"zstd", []byte{0x28, 0xb5, 0x2f, 0xfd}, decodeZstd},
	{"bzip2", []byte("BZh"), decodeBzip2},
	{"lzma", []byte{0x5d, 0x00, 0x00}, decodeLZMA},
	{"lzo", []byte{0x89, 'L', 'Z', 'O'}, nil},
	{"lz4", []byte{0x02, 0x21, 0x4c, 0x18}, nil},
}

// Decompress returns the vmlinux inside a bzImage payload and the name of
// its compression. Every format is followed by the uncompressed size as a
// 32-bit little-endian word (gzip's own trailer ends the same way).
func Decompress(payload []byte) ([]byte, string, error) {
	if len(payload) < 8 {
		return nil, "", fmt.Errorf("payload of %d bytes is too short", len(payload))
	}
	size := int(binary.LittleEndian.Uint32(payload[len(payload)-4:]))
	if size == 0 || size > maxKernelSize {
		return nil, "", fmt.Errorf("payload claims a %d-byte kernel", size)
	}
	for _, c := range compressions {
		if !bytes.HasPrefix(payload, c.magic) {
			continue
		}
		if c.decode == nil {
			return nil, c.name, fmt.Errorf("%s-compressed kernels are not supported: boot the bzImage or pass a vmlinux", c.name)
		}
		stream := payload
		if c.name != "gzip" {
			stream = payload[:len(payload)-4]
		}
		out, err := c.decode(stream, size)
		if err != nil {
			return nil, c.name, fmt.Errorf("%s: %w", c.name, err)
		}
		if len(out) != size {
			return nil, c.name, fmt.Errorf("%s: got %d bytes, the payload says %d", c.name, len(out), size)
		}
		return out, c.name, nil
	}
	return nil, "", fmt.Errorf("payload starts with % x: unknown compression", payload[:4])
}

func readExactly(r io.Reader, size int) ([]byte, error) {
	out := make([]byte, size)
	if _, err := io.ReadFull(r, out); err != nil {
		return nil, err
	}
	return out, nil
}

func decodeGzip(s []byte, size int) ([]byte, error) {
	r, err := gzip.NewReader(bytes.NewReader(s))
	if err != nil {
		return nil, err
	}
	r.Multistream(false)
	out, err := readExactly(r, size)
	if err != nil {
		return nil, err
	}
	// Reading to the end verifies the CRC.
	if n, err := io.Copy(io.Discard, r); err != nil || n != 0 {
		return nil, fmt.Errorf("trailing data or bad CRC: %v", err)
	}
	return out, nil
}

func decodeZstd(s []byte, size int) ([]byte, error) {
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(2*maxKernelSize))
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.DecodeAll(s, make([]byte, 0, size))
}

func decodeBzip2(s []byte, size int) ([]byte, error) {
	return readExactly(bzip2.NewReader(bytes.NewReader(s)), size)
}

func decodeLZMA(s []byte, size int) ([]byte, error) {
	r, err := lzma.ReaderConfig{DictCap: 1 << 27}.NewReader(bytes.NewReader(s))
	if err != nil {
		return nil, err
	}
	return readExactly(r, size)
}

// CheckPVH returns nil when k is an x86-64 ELF kernel with a PVH entry
// note, the form QEMU boots with -kernel and no decompression.
func CheckPVH(k []byte) error {
	f, err := elf.NewFile(bytes.NewReader(k))
	if err != nil {
		return fmt.Errorf("not an ELF kernel: %w", err)
	}
	if f.Machine != elf.EM_X86_64 {
		return fmt.Errorf("ELF kernel for %v, want x86-64", f.Machine)
	}
	for _, p := range f.Progs {
		if p.Type != elf.PT_NOTE {
			continue
		}
		b, err := io.ReadAll(p.Open())
		if err != nil {
			return fmt.Errorf("ELF note segment: %w", err)
		}
		if hasPVHNote(b, f.ByteOrder) {
			return nil
		}
	}
	return ErrNoPVH
}

// hasPVHNote looks for the Xen note of type XEN_ELFNOTE_PHYS32_ENTRY (18)
// that holds the 32-bit PVH entry point.
func hasPVHNote(b []byte, bo binary.ByteOrder) bool {
	const phys32Entry = 18
	align4 := func(n uint64) uint64 { return (n + 3) &^ 3 }
	for len(b) >= 12 {
		namesz, descsz, typ := uint64(bo.Uint32(b)), uint64(bo.Uint32(b[4:])), bo.Uint32(b[8:])
		n := 12 + align4(namesz) + align4(descsz)
		if n > uint64(len(b)) {
			return false
		}
		if typ == phys32Entry && namesz == 4 && string(b[12:16]) == "Xen\x00" && descsz >= 4 {
			return true
		}
		b = b[n:]
	}
	return false
}

// Bootable returns the file QEMU should boot for kernel: the kernel itself
// when it is already a PVH-capable ELF; for a bzImage, its vmlinux,
// extracted once into cacheDir (named by the bzImage's hash) and reused.
// note says what was done, for the console.
func Bootable(kernel, cacheDir string) (path, note string, err error) {
	k, err := os.ReadFile(kernel)
	if err != nil {
		return "", "", fmt.Errorf("kernel: %w", err)
	}
	if !IsBzImage(k) {
		if err := CheckPVH(k); err != nil {
			return "", "", fmt.Errorf("kernel %s: %w", kernel, err)
		}
		return kernel, "vmlinux (PVH)", nil
	}
	sum := sha256.Sum256(k)
	cached := filepath.Join(cacheDir, "vmlinux", filepath.Base(kernel)+"-"+hex.EncodeToString(sum[:8]))
	if c, err := os.ReadFile(cached); err == nil && CheckPVH(c) == nil {
		return cached, "vmlinux (PVH, cached " + cached + ")", nil
	}
	payload, err := Payload(k)
	if err != nil {
		return "", "", fmt.Errorf("kernel %s: %w", kernel, err)
	}
	v, comp, err := Decompress(payload)
	if err != nil {
		return "", "", fmt.Errorf("kernel %s: %w", kernel, err)
	}
	if err := CheckPVH(v); err != nil {
		return "", "", fmt.Errorf("kernel %s: unpacked %s payload: %w", kernel, comp, err)
	}
	if err := writeAtomic(cached, v); err != nil {
		return "", "", fmt.Errorf("caching vmlinux: %w", err)
	}
	return cached, "vmlinux (PVH, unpacked from " + comp + " bzImage into " + cached + ")", nil
}

func writeAtomic(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, werr := f.Write(b)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}
