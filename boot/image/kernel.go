package image

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// ErrNoKernel says that no kernel was found anywhere the runner looks.
var ErrNoKernel = errors.New("no kernel found")

// CacheDir is where ether9 keeps fetched kernels and unpacked vmlinux
// files: ${XDG_CACHE_HOME:-$HOME/.cache}/ether9, as tools/lib/install.sh.
func CacheDir() (string, error) {
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "ether9"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("cache dir: %w", err)
	}
	return filepath.Join(home, ".cache", "ether9"), nil
}

// KernelSearch says where FindKernel looks, in order.
type KernelSearch struct {
	Flag  string // -kernel
	Env   string // $ETHER9_KERNEL
	Cache string // the cache directory; kernels under kernel/*/boot/
	Boot  string // the host's /boot
}

// FindKernel returns the first kernel of: the flag, the environment, the
// newest in the cache, the newest in /boot. A named file that is missing
// is an error, not a reason to look further.
func FindKernel(s KernelSearch) (string, error) {
	for _, named := range []struct{ what, path string }{{"-kernel", s.Flag}, {"ETHER9_KERNEL", s.Env}} {
		if named.path == "" {
			continue
		}
		if err := readable(named.path); err != nil {
			return "", fmt.Errorf("kernel from %s: %w", named.what, err)
		}
		return named.path, nil
	}
	var tried []string
	if s.Cache != "" {
		pat := filepath.Join(s.Cache, "kernel", "*", "boot", "vmlinuz-*")
		if k := newest(pat); k != "" {
			return k, nil
		}
		tried = append(tried, pat)
	}
	if s.Boot != "" {
		pat := filepath.Join(s.Boot, "vmlinuz-*")
		if k := newest(pat); k != "" {
			return k, nil
		}
		tried = append(tried, pat)
	}
	return "", fmt.Errorf("%w (looked in %s): run tools/run, which fetches a Debian kernel into the cache, or pass -kernel FILE or set ETHER9_KERNEL",
		ErrNoKernel, strings.Join(tried, ", "))
}

func readable(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", p)
	}
	return nil
}

// newest returns the readable match of pat with the highest kernel
// version in its name, or "".
func newest(pat string) string {
	m, _ := filepath.Glob(pat)
	m = slices.DeleteFunc(m, func(p string) bool { return readable(p) != nil })
	if len(m) == 0 {
		return ""
	}
	slices.SortFunc(m, func(a, b string) int { return compareVersions(filepath.Base(a), filepath.Base(b)) })
	return m[len(m)-1]
}

// compareVersions orders names like vmlinuz-6.1.0-9-amd64 and
// vmlinuz-6.1.0-57-amd64 by their numeric runs, as sort -V does.
func compareVersions(a, b string) int {
	for a != "" && b != "" {
		na, ra := leadingNumber(a)
		nb, rb := leadingNumber(b)
		switch {
		case na >= 0 && nb >= 0:
			if na != nb {
				if na < nb {
					return -1
				}
				return 1
			}
			a, b = ra, rb
		case a[0] != b[0]:
			if a[0] < b[0] {
				return -1
			}
			return 1
		default:
			a, b = a[1:], b[1:]
		}
	}
	return len(a) - len(b)
}

// leadingNumber splits off a leading decimal number; -1 if there is none.
func leadingNumber(s string) (int, string) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 {
		return -1, s
	}
	n, err := strconv.Atoi(s[:min(i, 9)])
	if err != nil {
		return -1, s
	}
	return n, s[i:]
}
