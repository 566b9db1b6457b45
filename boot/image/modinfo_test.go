package image

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// moduleELF returns a minimal x86-64 relocatable ELF, the shape of a .ko,
// whose .modinfo section holds the strings kv, NUL-terminated.
func moduleELF(kv ...string) []byte {
	const ehsize, shsize = 64, 64
	var modinfo []byte
	for _, s := range kv {
		modinfo = append(append(modinfo, s...), 0)
	}
	shstr := []byte("\x00.modinfo\x00.shstrtab\x00")
	le := binary.LittleEndian
	b := make([]byte, ehsize)
	copy(b, "\x7fELF")
	b[4], b[5], b[6] = 2, 1, 1 // 64-bit, little-endian, version 1
	le.PutUint16(b[16:], 1)    // ET_REL
	le.PutUint16(b[18:], 62)   // EM_X86_64
	le.PutUint32(b[20:], 1)
	le.PutUint16(b[52:], ehsize)
	le.PutUint16(b[58:], shsize)
	modOff := len(b)
	b = append(b, modinfo...)
	strOff := len(b)
	b = append(b, shstr...)
	shoff := len(b)
	le.PutUint64(b[40:], uint64(shoff))
	le.PutUint16(b[60:], 3) // shnum
	le.PutUint16(b[62:], 2) // shstrndx
	sh := func(name, typ uint32, off, size int) {
		h := make([]byte, shsize)
		le.PutUint32(h[0:], name)
		le.PutUint32(h[4:], typ)
		le.PutUint64(h[24:], uint64(off))
		le.PutUint64(h[32:], uint64(size))
		le.PutUint64(h[48:], 1)
		b = append(b, h...)
	}
	b = append(b, make([]byte, shsize)...) // the null section
	sh(1, 1, modOff, len(modinfo))         // .modinfo, PROGBITS
	sh(10, 3, strOff, len(shstr))          // .shstrtab, STRTAB
	return b
}

func TestModinfo(t *testing.T) {
	info, err := Modinfo(moduleELF("license=GPL", "alias=pci:v00008086d000010C9", "alias=pci:v00008086d000010E6", "depends=dca,i2c-algo-bit", "name=igb"))
	if err != nil {
		t.Fatal(err)
	}
	if got := info["depends"]; !slices.Equal(got, []string{"dca,i2c-algo-bit"}) {
		t.Errorf("depends = %q", got)
	}
	if got := info["alias"]; len(got) != 2 || got[1] != "pci:v00008086d000010E6" {
		t.Errorf("alias = %q, want both in order", got)
	}
	if _, err := Modinfo([]byte("\x7fELF not really")); err == nil {
		t.Error("a truncated ELF gave no error")
	}
	if _, err := Modinfo(elfWithNotes(nil)); err == nil || !strings.Contains(err.Error(), ".modinfo") {
		t.Errorf("an ELF without .modinfo: err = %v", err)
	}
}

// driverPackage lays out modules (name -> modinfo strings) under an
// unpacked kernel package, in the directories Debian uses.
func driverPackage(t *testing.T, mods map[string][]string) string {
	t.Helper()
	kernel, _ := kernelPackage(t)
	root := filepath.Join(filepath.Dir(filepath.Dir(kernel)), "lib", "modules", "6.1.0-57-amd64", "kernel")
	for rel, kv := range mods {
		p := filepath.Join(root, rel+".ko")
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, moduleELF(kv...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return kernel
}

// igb is found with its two dependencies, which come first; a name with
// an underscore finds a file with a dash (i2c_algo_bit, i2c-algo-bit.ko).
func TestFindDriver(t *testing.T) {
	kernel := driverPackage(t, map[string][]string{
		"drivers/net/ethernet/intel/igb/igb":       {"depends=dca,i2c_algo_bit", "name=igb"},
		"drivers/net/ethernet/intel/e1000e/e1000e": {"depends=", "name=e1000e"},
		"drivers/dca/dca":                          {"depends=", "name=dca"},
		"drivers/i2c/algos/i2c-algo-bit":           {"depends=", "name=i2c_algo_bit"},
	})
	files, order, err := FindDriver(kernel, "igb")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"dca", "i2c-algo-bit", "igb"}; !slices.Equal(order, want) {
		t.Errorf("load order %q, want %q", order, want)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Name)
		if _, err := Modinfo(f.Data); err != nil {
			t.Errorf("%s: %v", f.Name, err)
		}
	}
	if want := []string{"lib/modules/dca.ko", "lib/modules/i2c-algo-bit.ko", "lib/modules/igb.ko"}; !slices.Equal(names, want) {
		t.Errorf("files %q, want %q", names, want)
	}
	if _, order, err := FindDriver(kernel, "e1000e"); err != nil || !slices.Equal(order, []string{"e1000e"}) {
		t.Errorf("e1000e: %q, %v", order, err)
	}
}

func TestFindDriverMissing(t *testing.T) {
	kernel := driverPackage(t, map[string][]string{
		"drivers/net/ethernet/intel/igb/igb": {"depends=dca,i2c-algo-bit"},
		"drivers/dca/dca":                    {"depends="},
		"drivers/a/loop1":                    {"depends=loop2"},
		"drivers/a/loop2":                    {"depends=loop1"},
	})
	_, _, err := FindDriver(kernel, "igb")
	if !errors.Is(err, ErrNoModules) || !strings.Contains(err.Error(), "i2c-algo-bit (needed by igb)") {
		t.Errorf("missing dependency: %v", err)
	}
	if _, _, err := FindDriver(kernel, "igc"); !errors.Is(err, ErrNoModules) || !strings.Contains(err.Error(), "igc is not in") {
		t.Errorf("missing module: %v", err)
	}
	if _, _, err := FindDriver(kernel, "loop1"); err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Errorf("dependency cycle: %v", err)
	}
}

// The real modules, when the cache has them (tools/lib/install.sh keeps
// them): igb's dependencies as Debian's kernel names them.
func TestFindDriverCache(t *testing.T) {
	kernels, _ := filepath.Glob(filepath.Join(os.Getenv("HOME"), ".cache", "ether9", "kernel", "*", "boot", "vmlinuz-*"))
	if len(kernels) == 0 {
		t.Skip("no kernel in the cache (tools/lib/install.sh fetches one)")
	}
	_, order, err := FindDriver(kernels[len(kernels)-1], "igb")
	if errors.Is(err, ErrNoModules) && strings.Contains(err.Error(), "igb is not in") {
		t.Skipf("the cached kernel predates keeping igb: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if order[len(order)-1] != "igb" || !slices.Contains(order, "dca") {
		t.Errorf("igb load order %q", order)
	}
}

func FuzzParseModinfo(f *testing.F) {
	f.Add([]byte("depends=dca,i2c-algo-bit\x00name=igb\x00"))
	f.Add([]byte("\x00\x00=x\x00novalue\x00a=b=c"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for k, vs := range parseModinfo(data) {
			if k == "" || strings.ContainsRune(k, 0) {
				t.Fatalf("key %q", k)
			}
			for _, v := range vs {
				if strings.ContainsRune(v, 0) {
					t.Fatalf("value %q holds a NUL", v)
				}
			}
		}
	})
}
