package image

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Modules are the kernel modules /init loads, in load order: uio and
// uio_pci_generic hand a NIC's legacy interrupt to /init. Nothing else
// of the module tree goes into the initramfs.
var Modules = []string{"uio", "uio_pci_generic"}

// ModuleDir is where the initramfs holds Modules, as NAME.ko.
const ModuleDir = "lib/modules"

// File is a file the initramfs carries besides /init.
type File struct {
	Name string // path inside the archive, without a leading slash
	Data []byte
}

// ErrNoModules says that a kernel's package holds none of Modules.
var ErrNoModules = errors.New("no modules")

// FindModules reads Modules from the package of kernel (a .../boot/vmlinuz-VER
// file; the modules are under .../lib/modules/VER/kernel/drivers/uio),
// uncompressing .ko.xz ones.
func FindModules(kernel string) ([]File, error) {
	ver, ok := strings.CutPrefix(filepath.Base(kernel), "vmlinuz-")
	if !ok {
		return nil, fmt.Errorf("%w: %s is not named vmlinuz-VERSION", ErrNoModules, kernel)
	}
	dir := filepath.Join(filepath.Dir(filepath.Dir(kernel)), "lib", "modules", ver, "kernel", "drivers", "uio")
	var files []File
	for _, m := range Modules {
		b, err := readModule(filepath.Join(dir, m+".ko"))
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrNoModules, m, err)
		}
		files = append(files, File{Name: ModuleDir + "/" + m + ".ko", Data: b})
	}
	return files, nil
}

// readModule reads path, or path.xz uncompressed.
func readModule(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if !errors.Is(err, os.ErrNotExist) {
		return b, err
	}
	z, err := os.ReadFile(path + ".xz")
	if err != nil {
		return nil, err
	}
	b, err = unxz(z)
	if err != nil {
		return nil, fmt.Errorf("%s.xz: %w", path, err)
	}
	return b, nil
}
