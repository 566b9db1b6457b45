package image

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz/lzma"
)

func gz(t *testing.T, b []byte) []byte {
	var buf bytes.Buffer
	w, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	w.Write(b)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes() // gzip's own trailer ends with the size
}

func zst(t *testing.T, b []byte) []byte {
	e, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	return withSize(e.EncodeAll(b, nil), len(b))
}

// lzmaAlone compresses b in the .lzma format the kernel's lzma option uses.
func lzmaAlone(t *testing.T, b []byte) []byte {
	var buf bytes.Buffer
	w, err := lzma.WriterConfig{Size: int64(len(b))}.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(b)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return withSize(buf.Bytes(), len(b))
}

func TestDecompress(t *testing.T) {
	code := codeLike(codeLikeSize)
	xzStream, err := os.ReadFile("testdata/code.crc32.xz")
	if err != nil {
		t.Fatal(err)
	}
	// testdata/code20k.bz2: the first 20,000 bytes of codeLike, by bzip2 -9.
	bz, err := os.ReadFile("testdata/code20k.bz2")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		comp    string
		payload []byte
		want    []byte
	}{
		{"gzip", gz(t, code), code},
		{"zstd", zst(t, code), code},
		{"xz", withSize(xzStream, len(code)), code},
		{"lzma", lzmaAlone(t, code[:20000]), code[:20000]},
		{"bzip2", withSize(bz, 20000), code[:20000]},
	} {
		t.Run(tc.comp, func(t *testing.T) {
			p, err := Payload(bzImage(tc.payload))
			if err != nil {
				t.Fatal(err)
			}
			got, comp, err := Decompress(p)
			if err != nil {
				t.Fatal(err)
			}
			if comp != tc.comp || !bytes.Equal(got, tc.want) {
				t.Fatalf("got %d bytes of %s, want %d bytes of %s", len(got), comp, len(tc.want), tc.comp)
			}
		})
	}
}

func TestDecompressBadInput(t *testing.T) {
	code := codeLike(4096)
	for _, tc := range []struct {
		name    string
		payload []byte
		want    string
	}{
		{"unknown magic", withSize([]byte("plain text, not compressed"), 26), "unknown compression"},
		{"lz4", withSize([]byte{0x02, 0x21, 0x4c, 0x18, 0, 0, 0, 0}, 100), "lz4-compressed kernels are not supported"},
		{"size lies", withSize(zst(t, code)[:len(zst(t, code))-4], len(code)+1), "zstd"},
		{"zero size", withSize([]byte{0x1f, 0x8b, 8, 0}, 0), "claims a 0-byte kernel"},
		{"huge size", withSize([]byte{0x1f, 0x8b, 8, 0}, maxKernelSize+1), "claims a"},
		{"truncated gzip", gz(t, code)[:100], ""},
		{"too short", []byte{1, 2, 3}, "too short"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Decompress(tc.payload)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestPayloadBadHeader(t *testing.T) {
	good := bzImage(gz(t, codeLike(1000)))
	for _, tc := range []struct {
		name   string
		mutate func([]byte) []byte
	}{
		{"no magic", func(b []byte) []byte { b[hdrMagic] = 'X'; return b }},
		{"old protocol", func(b []byte) []byte { b[hdrVersion], b[hdrVersion+1] = 0x04, 0x02; return b }},
		{"payload past the end", func(b []byte) []byte { b[hdrPayloadLength+3] = 0x10; return b }},
		{"short file", func(b []byte) []byte { return b[:0x100] }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Payload(tc.mutate(append([]byte(nil), good...))); err == nil {
				t.Fatal("no error")
			}
		})
	}
}

func TestCheckPVH(t *testing.T) {
	if err := CheckPVH(pvhELF()); err != nil {
		t.Fatalf("vmlinux with the PVH note: %v", err)
	}
	noPVH := elfWithNotes(append(note("GNU", 3, []byte{1, 2, 3, 4}), note("Xen", 17, []byte{1, 2, 3, 4})...))
	if err := CheckPVH(noPVH); !errors.Is(err, ErrNoPVH) {
		t.Fatalf("no PVH note: err = %v, want ErrNoPVH", err)
	}
	badNote := elfWithNotes([]byte{4, 0, 0, 0, 0xff, 0xff, 0xff, 0x7f, 18, 0, 0, 0, 'X', 'e', 'n', 0})
	if err := CheckPVH(badNote); !errors.Is(err, ErrNoPVH) {
		t.Fatalf("note overrunning its segment: err = %v, want ErrNoPVH", err)
	}
	if err := CheckPVH([]byte("MZ not an elf")); err == nil {
		t.Fatal("non-ELF accepted")
	}
}

func TestBootable(t *testing.T) {
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	vmlinux := pvhELF()

	elfPath := filepath.Join(dir, "vmlinux")
	os.WriteFile(elfPath, vmlinux, 0o644)
	if p, _, err := Bootable(elfPath, cache); err != nil || p != elfPath {
		t.Fatalf("ELF kernel: Bootable = %q, %v; want the file itself", p, err)
	}

	bz := filepath.Join(dir, "vmlinuz-6.1.0-1-amd64")
	os.WriteFile(bz, bzImage(zst(t, vmlinux)), 0o644)
	p, note, err := Bootable(bz, cache)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(p, filepath.Join(cache, "vmlinux")+string(filepath.Separator)) || !strings.Contains(note, "zstd") {
		t.Fatalf("Bootable = %q (%s), want a zstd unpack into the cache", p, note)
	}
	if got, _ := os.ReadFile(p); !bytes.Equal(got, vmlinux) {
		t.Fatal("cached vmlinux differs from the packed one")
	}
	p2, note, err := Bootable(bz, cache)
	if err != nil || p2 != p || !strings.Contains(note, "cached") {
		t.Fatalf("second Bootable = %q, %q, %v; want the cached file", p2, note, err)
	}

	// A different bzImage under the same name is not served stale.
	other := append(pvhELF(), 'x')
	os.WriteFile(bz, bzImage(zst(t, other)), 0o644)
	p3, _, err := Bootable(bz, cache)
	if err != nil || p3 == p {
		t.Fatalf("changed bzImage: Bootable = %q, %v; want a new cache entry", p3, err)
	}

	noPVH := filepath.Join(dir, "nopvh")
	os.WriteFile(noPVH, bzImage(zst(t, elfWithNotes(nil))), 0o644)
	if _, _, err := Bootable(noPVH, cache); !errors.Is(err, ErrNoPVH) {
		t.Fatalf("bzImage without PVH: err = %v, want ErrNoPVH", err)
	}
	if _, _, err := Bootable(filepath.Join(dir, "missing"), cache); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing kernel: err = %v", err)
	}
}
