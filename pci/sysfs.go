package pci

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// SysfsRoot is where Linux lists PCI functions.
const SysfsRoot = "/sys/bus/pci/devices"

// Sysfs reaches configuration space through Linux's per-function config
// files (<root>/SSSS:BB:DD.F/config). The kernel performs each access with
// the width asked for. A function without a directory reads all ones, like
// an empty slot; reads past the end of a file (256 bytes for conventional
// functions, 64 for an unprivileged reader) are ErrOutOfRange.
type Sysfs struct {
	root string

	mu    sync.Mutex
	files map[Addr]configFile
}

// configFile is an open config file and its size: 256 or 4096, what the
// kernel will read or write.
type configFile struct {
	*os.File
	size int64
}

// NewSysfs returns a Config over the functions under root ("" for
// SysfsRoot).
func NewSysfs(root string) *Sysfs {
	if root == "" {
		root = SysfsRoot
	}
	return &Sysfs{root: root, files: make(map[Addr]configFile)}
}

// SysfsName is the directory name Linux gives a function: 0000:00:02.0.
func SysfsName(a Addr) string {
	return fmt.Sprintf("%04x:%02x:%02x.%x", a.Seg, a.Bus, a.Dev, a.Fn)
}

// Addrs lists the functions the kernel knows, in address order.
func (s *Sysfs) Addrs() ([]Addr, error) {
	ents, err := os.ReadDir(s.root)
	if err != nil {
		return nil, fmt.Errorf("pci sysfs: %w", err)
	}
	var addrs []Addr
	for _, e := range ents {
		a, err := ParseAddr(e.Name())
		if err != nil {
			return nil, fmt.Errorf("pci sysfs %s: %w", s.root, err)
		}
		addrs = append(addrs, a)
	}
	slices.SortFunc(addrs, Addr.Compare)
	return addrs, nil
}

// Segments lists the segments that have at least one function.
func (s *Sysfs) Segments() ([]uint16, error) {
	addrs, err := s.Addrs()
	if err != nil {
		return nil, err
	}
	var segs []uint16
	for _, a := range addrs {
		if !slices.Contains(segs, a.Seg) {
			segs = append(segs, a.Seg)
		}
	}
	return segs, nil
}

// file opens a function's config file once, read-write when allowed. A
// missing function gives a nil file and no error.
func (s *Sysfs) file(a Addr) (configFile, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f, ok := s.files[a]; ok {
		return f, nil
	}
	path := filepath.Join(s.root, SysfsName(a), "config")
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) {
		f, err = os.Open(path)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return configFile{}, nil
	}
	if err != nil {
		return configFile{}, fmt.Errorf("pci sysfs %v: %w", a, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return configFile{}, fmt.Errorf("pci sysfs %v: %w", a, err)
	}
	cf := configFile{File: f, size: st.Size()}
	s.files[a] = cf
	return cf, nil
}

// ReadConfig reads size bytes at off with one pread.
func (s *Sysfs) ReadConfig(a Addr, off, size int) (uint32, error) {
	if err := checkAccess(a, off, size, ExtConfigSize); err != nil {
		return 0, err
	}
	f, err := s.file(a)
	if err != nil {
		return 0, err
	}
	if f.File == nil {
		return sizeMask(size), nil
	}
	if int64(off+size) > f.size {
		return 0, fmt.Errorf("pci sysfs %v: offset %#x: %w (config file has %d bytes)", a, off, ErrOutOfRange, f.size)
	}
	var buf [4]byte
	n, err := f.ReadAt(buf[:size], int64(off))
	if n < size {
		if err == nil || err == io.EOF {
			// Unprivileged readers get only the first 64 bytes.
			return 0, fmt.Errorf("pci sysfs %v: offset %#x: %w (read ends early)", a, off, ErrOutOfRange)
		}
		return 0, fmt.Errorf("pci sysfs %v: read %#x: %w", a, off, err)
	}
	return binary.LittleEndian.Uint32(buf[:]), nil
}

// WriteConfig writes the low size bytes of v at off with one pwrite.
func (s *Sysfs) WriteConfig(a Addr, off, size int, v uint32) error {
	if err := checkAccess(a, off, size, ExtConfigSize); err != nil {
		return err
	}
	if v > sizeMask(size) {
		return fmt.Errorf("pci sysfs %v: %w: value %#x does not fit %d bytes", a, ErrBadAccess, v, size)
	}
	f, err := s.file(a)
	if err != nil {
		return err
	}
	if f.File == nil {
		return fmt.Errorf("pci sysfs %v: write %#x: %w", a, off, ErrAbsent)
	}
	if int64(off+size) > f.size {
		return fmt.Errorf("pci sysfs %v: offset %#x: %w (config file has %d bytes)", a, off, ErrOutOfRange, f.size)
	}
	var buf [4]byte
	binary.LittleEndian.PutUint32(buf[:], v)
	n, err := f.WriteAt(buf[:size], int64(off))
	if err != nil {
		return fmt.Errorf("pci sysfs %v: write %#x: %w", a, off, err)
	}
	if n < size {
		return fmt.Errorf("pci sysfs %v: write %#x: short write of %d bytes", a, off, n)
	}
	return nil
}

// Close closes every config file opened so far.
func (s *Sysfs) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for a, f := range s.files {
		if err := f.Close(); err != nil {
			errs = append(errs, fmt.Errorf("pci sysfs %v: %w", a, err))
		}
		delete(s.files, a)
	}
	return errors.Join(errs...)
}

// BARSizes reads the sizes the kernel found for the function's BARs from
// its resource file ("start end flags" per line, BARs first), so a
// function that a running kernel owns can be described without writing
// its BARs. An unassigned BAR has size 0.
func (s *Sysfs) BARSizes(a Addr) ([6]uint64, error) {
	var sizes [6]uint64
	path := filepath.Join(s.root, SysfsName(a), "resource")
	b, err := os.ReadFile(path)
	if err != nil {
		return sizes, fmt.Errorf("pci sysfs %v: %w", a, err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) < len(sizes) {
		return sizes, fmt.Errorf("pci sysfs %v: resource file has %d lines, want at least %d", a, len(lines), len(sizes))
	}
	for i := range sizes {
		var v [3]uint64
		fields := strings.Fields(lines[i])
		if len(fields) != len(v) {
			return sizes, fmt.Errorf("pci sysfs %v: resource line %d %q: want start, end and flags", a, i, lines[i])
		}
		for j, f := range fields {
			if v[j], err = strconv.ParseUint(f, 0, 64); err != nil {
				return sizes, fmt.Errorf("pci sysfs %v: resource line %d: %w", a, i, err)
			}
		}
		if start, end := v[0], v[1]; end > start {
			sizes[i] = end - start + 1
		}
	}
	return sizes, nil
}
