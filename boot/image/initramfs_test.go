package image

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/u-root/u-root/pkg/cpio"
)

func TestWriteInitramfs(t *testing.T) {
	init := []byte("\x7fELF pretend static binary")
	var buf bytes.Buffer
	if err := WriteInitramfs(&buf, init); err != nil {
		t.Fatal(err)
	}
	recs, err := cpio.ReadAllRecords(cpio.Newc.Reader(bytes.NewReader(buf.Bytes())))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]cpio.Record{}
	for _, r := range recs {
		got[r.Name] = r
	}
	for _, d := range []string{"dev", "proc", "sys", "tmp"} {
		if r, ok := got[d]; !ok || r.Mode&cpio.S_IFMT != cpio.S_IFDIR {
			t.Errorf("%s: missing or not a directory (%+v)", d, r.Info)
		}
	}
	con, ok := got["dev/console"]
	if !ok || con.Mode&cpio.S_IFMT != cpio.S_IFCHR || con.Rmajor != 5 || con.Rminor != 1 {
		t.Errorf("dev/console: %+v, want char device 5:1", con.Info)
	}
	r, ok := got["init"]
	if !ok {
		t.Fatalf("no init in %d records", len(recs))
	}
	if r.Mode&cpio.S_IFMT != cpio.S_IFREG || r.Mode&0o777 != 0o755 {
		t.Errorf("init mode %o, want a regular file 0755", r.Mode)
	}
	data, err := io.ReadAll(io.NewSectionReader(r.ReaderAt, 0, int64(r.FileSize)))
	if err != nil || !bytes.Equal(data, init) {
		t.Errorf("init content %q, %v; want %q", data, err, init)
	}
	if !strings.HasPrefix(buf.String(), "070701") {
		t.Errorf("archive starts %q, want the newc magic 070701", buf.String()[:6])
	}

	var again bytes.Buffer
	WriteInitramfs(&again, init)
	if !bytes.Equal(again.Bytes(), buf.Bytes()) {
		t.Error("two archives of the same /init differ: not reproducible")
	}
	if err := WriteInitramfs(io.Discard, nil); err == nil {
		t.Error("empty /init accepted")
	}
}

func TestCmdline(t *testing.T) {
	got, err := Cmdline("ether9.ip=10.0.2.15/24  ether9.gw=10.0.2.2", "", "ether9.selftest")
	if err != nil {
		t.Fatal(err)
	}
	want := BaseCmdline + " ether9.ip=10.0.2.15/24 ether9.gw=10.0.2.2 ether9.selftest"
	if got != want {
		t.Fatalf("Cmdline = %q, want %q", got, want)
	}
	for _, bad := range []string{"intel_iommu=on", "intremap=on", "iommu=pt"} {
		if _, err := Cmdline(bad); err == nil {
			t.Errorf("%s accepted: it hands VT-d back to Linux", bad)
		}
	}
	// The metal platform's line names no console, so that the shim
	// can take firmware's; one the caller names stays.
	if strings.Contains(MetalBaseCmdline, "console=") || MetalBaseCmdline != strings.Replace(BaseCmdline, "console=ttyS0 ", "", 1) {
		t.Errorf("MetalBaseCmdline %q is not BaseCmdline %q without its console", MetalBaseCmdline, BaseCmdline)
	}
	for extra, want := range map[string]string{
		"ether9.selftest":                  "panic=-1 quiet intel_iommu=off intremap=off ether9.selftest",
		"console=ttyS1,57600 metal.x2apic": "panic=-1 quiet intel_iommu=off intremap=off console=ttyS1,57600 metal.x2apic",
	} {
		if got, err := MetalCmdline(extra); err != nil || got != want {
			t.Errorf("MetalCmdline(%q) = %q, %v; want %q", extra, got, err, want)
		}
	}
}
