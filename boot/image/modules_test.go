package image

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/u-root/u-root/pkg/cpio"
)

// kernelPackage lays out an unpacked kernel package under a temporary
// directory and returns its vmlinuz path and module directory.
func kernelPackage(t *testing.T) (kernel, uio string) {
	t.Helper()
	root := t.TempDir()
	kernel = filepath.Join(root, "boot", "vmlinuz-6.1.0-57-amd64")
	uio = filepath.Join(root, "lib", "modules", "6.1.0-57-amd64", "kernel", "drivers", "uio")
	for _, d := range []string{filepath.Dir(kernel), uio} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return kernel, uio
}

// The two modules are found beside the kernel, an .xz one uncompressed,
// and the initramfs carries them (and nothing else of the tree) under
// lib/modules.
func TestFindModules(t *testing.T) {
	kernel, uio := kernelPackage(t)
	xzData, err := os.ReadFile("testdata/code.crc32.xz")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{
		"lib/modules/uio.ko":             []byte("\x7fELF uio"),
		"lib/modules/uio_pci_generic.ko": codeLike(300000),
	}
	os.WriteFile(filepath.Join(uio, "uio.ko"), want["lib/modules/uio.ko"], 0o644)
	os.WriteFile(filepath.Join(uio, "uio_pci_generic.ko.xz"), xzData, 0o644)
	os.WriteFile(filepath.Join(uio, "uio_netx.ko"), []byte("not wanted"), 0o644)
	files, err := FindModules(kernel)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteInitramfs(&buf, []byte("init"), files...); err != nil {
		t.Fatal(err)
	}
	recs, err := cpio.ReadAllRecords(cpio.Newc.Reader(bytes.NewReader(buf.Bytes())))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]byte{}
	for _, r := range recs {
		if r.Mode&cpio.S_IFMT != cpio.S_IFREG || r.Name == "init" {
			continue
		}
		got[r.Name], _ = io.ReadAll(io.NewSectionReader(r.ReaderAt, 0, int64(r.FileSize)))
	}
	if len(got) != len(want) {
		t.Errorf("initramfs holds %d module files, want %d", len(got), len(want))
	}
	for name, w := range want {
		if !bytes.Equal(got[name], w) {
			t.Errorf("%s: %d bytes in the initramfs, want %d", name, len(got[name]), len(w))
		}
	}
}

// A package without the modules is ErrNoModules: the image still boots,
// and polls.
func TestFindModulesMissing(t *testing.T) {
	kernel, uio := kernelPackage(t)
	os.WriteFile(filepath.Join(uio, "uio.ko"), []byte("\x7fELF uio"), 0o644)
	if _, err := FindModules(kernel); !errors.Is(err, ErrNoModules) {
		t.Fatalf("err = %v, want ErrNoModules", err)
	}
}
