package image

import (
	"bytes"
	"debug/elf"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
)

// Modinfo returns the key=value pairs of a kernel module's .modinfo
// section (what modinfo(8) prints): NUL-separated strings. A key given
// more than once (alias, parm) keeps its values in order.
func Modinfo(ko []byte) (map[string][]string, error) {
	f, err := elf.NewFile(bytes.NewReader(ko))
	if err != nil {
		return nil, fmt.Errorf("modinfo: %w", err)
	}
	defer f.Close()
	s := f.Section(".modinfo")
	if s == nil {
		return nil, fmt.Errorf("modinfo: no .modinfo section")
	}
	data, err := s.Data()
	if err != nil {
		return nil, fmt.Errorf("modinfo: %w", err)
	}
	return parseModinfo(data), nil
}

// parseModinfo splits a .modinfo section's strings into their keys and
// values; strings without '=' (padding, garbage) are skipped.
func parseModinfo(data []byte) map[string][]string {
	m := make(map[string][]string)
	for _, kv := range bytes.Split(data, []byte{0}) {
		k, v, ok := strings.Cut(string(kv), "=")
		if !ok || k == "" {
			continue
		}
		m[k] = append(m[k], v)
	}
	return m
}

// moduleName is how Linux names a module: dashes and underscores are one.
func moduleName(s string) string { return strings.ReplaceAll(s, "-", "_") }

// FindDriver reads the module name from the package of kernel (a
// .../boot/vmlinuz-VER file; its modules are under .../lib/modules/VER/kernel)
// with every module it depends on (modinfo depends, recursively), and
// returns them in load order, dependencies first, as
// ModuleDir/NAME.ko files, and their names in the same order.
func FindDriver(kernel, name string) ([]File, []string, error) {
	ver, ok := strings.CutPrefix(filepath.Base(kernel), "vmlinuz-")
	if !ok {
		return nil, nil, fmt.Errorf("%w: %s is not named vmlinuz-VERSION", ErrNoModules, kernel)
	}
	root := filepath.Join(filepath.Dir(filepath.Dir(kernel)), "lib", "modules", ver, "kernel")
	paths := make(map[string]string) // module name -> file without .xz
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		base := strings.TrimSuffix(d.Name(), ".xz")
		if n, ok := strings.CutSuffix(base, ".ko"); ok && !d.IsDir() {
			paths[moduleName(n)] = strings.TrimSuffix(p, ".xz")
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrNoModules, err)
	}
	var files []File
	var order []string
	state := make(map[string]int) // 1: being loaded, 2: done
	var load func(n string, by []string) error
	load = func(n string, by []string) error {
		key := moduleName(n)
		switch state[key] {
		case 1:
			return fmt.Errorf("%w: %s: dependency cycle through %s", ErrNoModules, name, strings.Join(append(by, n), " -> "))
		case 2:
			return nil
		}
		state[key] = 1
		p, ok := paths[key]
		if !ok {
			if len(by) > 0 {
				return fmt.Errorf("%w: %s (needed by %s) is not in %s", ErrNoModules, n, by[len(by)-1], root)
			}
			return fmt.Errorf("%w: %s is not in %s", ErrNoModules, n, root)
		}
		b, err := readModule(p)
		if err != nil {
			return fmt.Errorf("%w: %s: %w", ErrNoModules, n, err)
		}
		info, err := Modinfo(b)
		if err != nil {
			return fmt.Errorf("%w: %s: %w", ErrNoModules, p, err)
		}
		for _, deps := range info["depends"] {
			for _, d := range strings.Split(deps, ",") {
				if d = strings.TrimSpace(d); d != "" {
					if err := load(d, append(by, n)); err != nil {
						return err
					}
				}
			}
		}
		state[key] = 2
		base := strings.TrimSuffix(filepath.Base(p), ".ko")
		files = append(files, File{Name: ModuleDir + "/" + base + ".ko", Data: b})
		order = append(order, base)
		return nil
	}
	if err := load(name, nil); err != nil {
		return nil, nil, err
	}
	return files, order, nil
}
