package image

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func touch(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("k"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestFindKernel(t *testing.T) {
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	boot := filepath.Join(dir, "boot")
	flagK := filepath.Join(dir, "flag-kernel")
	envK := filepath.Join(dir, "env-kernel")
	touch(t, flagK)
	touch(t, envK)
	touch(t, filepath.Join(boot, "vmlinuz-6.1.0-9-amd64"))
	touch(t, filepath.Join(boot, "vmlinuz-6.1.0-10-amd64"))

	s := KernelSearch{Flag: flagK, Env: envK, Cache: cache, Boot: boot}
	for _, tc := range []struct {
		name string
		s    func(KernelSearch) KernelSearch
		want string
	}{
		{"flag first", func(s KernelSearch) KernelSearch { return s }, flagK},
		{"then env", func(s KernelSearch) KernelSearch { s.Flag = ""; return s }, envK},
		{"then /boot, newest version", func(s KernelSearch) KernelSearch { s.Flag, s.Env = "", ""; return s },
			filepath.Join(boot, "vmlinuz-6.1.0-10-amd64")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := FindKernel(tc.s(s))
			if err != nil || got != tc.want {
				t.Fatalf("FindKernel = %q, %v; want %q", got, err, tc.want)
			}
		})
	}

	cached := filepath.Join(cache, "kernel", "linux-image-6.1.0-57-amd64", "boot", "vmlinuz-6.1.0-57-amd64")
	touch(t, cached)
	touch(t, filepath.Join(cache, "kernel", "linux-image-6.1.0-9-amd64", "boot", "vmlinuz-6.1.0-9-amd64"))
	if got, err := FindKernel(KernelSearch{Cache: cache, Boot: boot}); err != nil || got != cached {
		t.Fatalf("cache before /boot: FindKernel = %q, %v; want %q", got, err, cached)
	}

	if _, err := FindKernel(KernelSearch{Flag: filepath.Join(dir, "nope"), Cache: cache}); err == nil ||
		!strings.Contains(err.Error(), "-kernel") {
		t.Fatalf("missing -kernel file: err = %v, want an error naming -kernel", err)
	}
	_, err := FindKernel(KernelSearch{Cache: filepath.Join(dir, "empty"), Boot: filepath.Join(dir, "none")})
	if !errors.Is(err, ErrNoKernel) || !strings.Contains(err.Error(), "tools/run") {
		t.Fatalf("nothing anywhere: err = %v, want ErrNoKernel saying to run tools/run", err)
	}
}

func TestCompareVersions(t *testing.T) {
	ordered := []string{"vmlinuz-5.10.0-30-amd64", "vmlinuz-6.1.0-9-amd64", "vmlinuz-6.1.0-10-amd64",
		"vmlinuz-6.1.0-57-amd64", "vmlinuz-6.12.9-amd64", "vmlinuz-6.12.10-amd64"}
	for i := range ordered {
		for j := range ordered {
			got := compareVersions(ordered[i], ordered[j])
			if (i < j && got >= 0) || (i > j && got <= 0) || (i == j && got != 0) {
				t.Errorf("compareVersions(%q, %q) = %d", ordered[i], ordered[j], got)
			}
		}
	}
}
