package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// interruptsIGB is /proc/interrupts of the reference boot on QEMU's igb
// with two CPUs: MSI-X lines for the queues and one for the other causes,
// and an unrelated line whose name only starts alike.
const interruptsIGB = `           CPU0       CPU1       
  0:         43          0   IO-APIC   2-edge      timer
  4:        211          7   IO-APIC   4-edge      ttyS0
 24:          1          2   PCI-MSIX-0000:00:02.0   0-edge      eth0
 25:       1540        100   PCI-MSIX-0000:00:02.0   1-edge      eth0-TxRx-0
 26:          3          0   PCI-MSIX-0000:00:02.0   2-edge      eth0-TxRx-1
 27:          9          9   IO-APIC  11-fasteoi   eth1,eth0-shared
 28:          5          5   IO-APIC  12-fasteoi   eth00
NMI:          0          0   Non-maskable interrupts
ERR:          0
`

func TestParseInterrupts(t *testing.T) {
	got := parseInterrupts(interruptsIGB, "eth0")
	want := map[string]uint64{"eth0": 3, "eth0-TxRx-0": 1640, "eth0-TxRx-1": 3, "eth0-shared": 18}
	if len(got) != len(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %d, want %d", k, got[k], v)
		}
	}
	if n := len(parseInterrupts("", "eth0")); n != 0 {
		t.Errorf("empty file: %d lines", n)
	}
}

func FuzzParseInterrupts(f *testing.F) {
	f.Add(interruptsIGB, "eth0")
	f.Add("CPU0\n 1: x eth0\n2:\n", "eth0")
	f.Fuzz(func(t *testing.T, text, nic string) {
		for k := range parseInterrupts(text, nic) {
			if k != nic && !strings.HasPrefix(k, nic+"-") {
				t.Fatalf("line %q is not %q's", k, nic)
			}
		}
	})
}

// The page shows the driver, the IOMMU group's type and the counters
// that moved, as "NAME VALUE" lines the self-test diffs.
func TestWritePage(t *testing.T) {
	root := t.TempDir()
	dev := filepath.Join(root, "sys/devices/pci0000:00/0000:00:02.0")
	for _, d := range []string{dev + "/iommu_group", root + "/sys/bus/pci/drivers/igb", root + "/sys/class/net/eth0/statistics", root + "/proc"} {
		os.MkdirAll(d, 0o755)
	}
	os.Symlink(dev, root+"/sys/class/net/eth0/device")
	os.Symlink(root+"/sys/bus/pci/drivers/igb", dev+"/driver")
	os.WriteFile(dev+"/iommu_group/type", []byte("DMA-FQ\n"), 0o644)
	os.WriteFile(root+"/sys/class/net/eth0/statistics/rx_packets", []byte("1234\n"), 0o644)
	os.WriteFile(root+"/sys/class/net/eth0/statistics/rx_errors", []byte("0\n"), 0o644)
	os.WriteFile(root+"/proc/interrupts", []byte(interruptsIGB), 0o644)
	os.WriteFile(root+"/proc/uptime", []byte("12.34 10.00\n"), 0o644)
	var b strings.Builder
	sysfs{root: root, nic: "eth0"}.writePage(&b)
	page := b.String()
	for _, want := range []string{"linux reference: driver igb on eth0\n", "iommu DMA-FQ\n", "uptime 12.34s\n",
		"eth0 rx_packets 1234\n", "eth0 irq eth0-TxRx-0 1640\n"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, "rx_errors") {
		t.Errorf("a zero counter is shown:\n%s", page)
	}
	// No IOMMU group: intel_iommu=off.
	os.RemoveAll(dev + "/iommu_group")
	if m := (sysfs{root: root, nic: "eth0"}).iommuMode(); m != "off" {
		t.Errorf("without a group the mode is %q, want off", m)
	}
}
