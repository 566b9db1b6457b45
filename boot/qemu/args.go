// Package qemu boots an ether9 image in qemu-system-x86_64 (q35, Intel
// VT-d, one Intel NIC on restricted user networking) and watches its serial
// console.
package qemu

import (
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
)

// Binary is the QEMU system emulator ether9 boots in.
const Binary = "qemu-system-x86_64"

// NIC is an Intel NIC model and whether QEMU emulates it.
type NIC struct {
	Name   string // ether9's driver family
	Device string // QEMU's -device name; "" when QEMU has none
	Part   string // the emulated part
	MinVer int    // oldest QEMU major version with the model
}

// NICs are the families ether9 drives. QEMU emulates no i225/i226, so igc
// runs on the simulated machine only.
var NICs = []NIC{
	{Name: "e1000e", Device: "e1000e", Part: "82574L (8086:10d3)", MinVer: 2},
	{Name: "igb", Device: "igb", Part: "82576 (8086:10c9)", MinVer: 8},
	{Name: "igc", Part: "i225/i226"},
}

// ErrNoModel says that QEMU cannot emulate the NIC asked for.
var ErrNoModel = errors.New("QEMU has no model of this NIC")

// LookupNIC returns the NIC named name, or an error that says what exists.
func LookupNIC(name string) (NIC, error) {
	var names []string
	for _, n := range NICs {
		if n.Name == name {
			if n.Device == "" {
				return n, fmt.Errorf("-nic %s: %w (%s): run it on the simulated machine with -machine sim", name, ErrNoModel, n.Part)
			}
			return n, nil
		}
		names = append(names, n.Name)
	}
	return NIC{}, fmt.Errorf("-nic %s: unknown NIC family (have %s)", name, strings.Join(names, ", "))
}

// Forward is a host TCP port on 127.0.0.1 forwarded to a guest port.
type Forward struct {
	Host, Guest int
}

// Config is one boot: a kernel QEMU loads itself, or a disk the firmware
// boots from.
type Config struct {
	Binary  string // default Binary
	Kernel  string // vmlinux (PVH) or bzImage
	Initrd  string
	Cmdline string
	// BIOS, when set, is the legacy firmware that runs before a kernel
	// boot in place of QEMU's SeaBIOS (-bios): qboot for the metal
	// platform.
	BIOS string
	// Disk, when set, replaces Kernel, Initrd and Cmdline: a raw disk
	// image on a USB stick that UEFI firmware boots, as on a machine.
	Disk     string
	Firmware Firmware // the UEFI firmware for Disk
	NIC      NIC
	// CPU is the -cpu model; "" is max, every feature TCG emulates
	// (RDRAND among them, which the metal platform needs).
	CPU     string
	SMP     int
	MemMiB  int
	Forward []Forward
	Pcap    string // record the wire to this file when set
	// InterruptRemapping gives the intel-iommu interrupt remapping
	// (intremap=on), which the metal platform turns on; Linux-hosted
	// boots tell Linux intremap=off either way.
	InterruptRemapping bool
	// EIM adds extended interrupt mode to the remapping (eim=on,
	// ECAP.EIM), which a LAPIC in x2APIC mode needs (metal.x2apic).
	// QEMU takes it under TCG from 9.0 on (ExtendedInterrupts); older
	// ones refuse to start with it.
	EIM bool
	// COM2 puts the console, QEMU's stdio, on the second serial port
	// (I/O 0x2f8, IRQ 3), as IPMI serial-over-LAN is on many servers;
	// the first is left unconnected.
	COM2 bool
	// NoSerial leaves the machine without serial ports, as most NUCs
	// come: the console shows nothing, and the machine is reached over
	// the network only.
	NoSerial bool
	// SPCR names a file holding the body of a Serial Port Console
	// Redirection table (after its 36-byte header, which QEMU makes)
	// to add to the machine's ACPI tables, as firmware that redirects
	// its console has.
	SPCR string
	// EHCI adds an ICH9 EHCI USB controller, as older boards carry
	// beside their NICs, for the metal platform's USB hand-off to find.
	EHCI bool
	// Stream, when set, cables the NIC to the Unix socket at this path
	// (a stream netdev, see StreamEnd) instead of user networking; there
	// are no forwards then.
	Stream string
}

// Args returns QEMU's command line for c, without the binary.
func (c Config) Args() ([]string, error) {
	boot, err := c.bootArgs()
	if err != nil {
		return nil, err
	}
	if c.NIC.Device == "" {
		return nil, fmt.Errorf("qemu: %w: %s", ErrNoModel, c.NIC.Name)
	}
	if c.SMP < 1 || c.SMP > 64 {
		return nil, fmt.Errorf("qemu: -smp %d out of range 1..64", c.SMP)
	}
	if c.MemMiB < 128 {
		return nil, fmt.Errorf("qemu: -m %d MiB is too small (128 or more)", c.MemMiB)
	}
	netdev := "user,id=n0,restrict=on"
	if c.Stream != "" {
		if len(c.Forward) > 0 {
			return nil, fmt.Errorf("qemu: forwards need user networking, not a stream netdev")
		}
		if strings.Contains(c.Stream, ",") {
			return nil, fmt.Errorf("qemu: stream socket %q must not contain a comma", c.Stream)
		}
		netdev = "stream,id=n0,server=off,addr.type=unix,addr.path=" + c.Stream
	}
	for _, f := range c.Forward {
		if f.Host < 1 || f.Host > 65535 || f.Guest < 1 || f.Guest > 65535 {
			return nil, fmt.Errorf("qemu: forward %d->%d: port out of range", f.Host, f.Guest)
		}
		netdev += fmt.Sprintf(",hostfwd=tcp:127.0.0.1:%d-:%d", f.Host, f.Guest)
	}
	cpu := c.CPU
	if cpu == "" {
		cpu = "max"
	}
	a := []string{
		"-machine", Machine,
		"-cpu", cpu,
		"-smp", strconv.Itoa(c.SMP),
		"-m", strconv.Itoa(c.MemMiB),
		"-nographic", "-vga", "none",
		"-no-reboot",
	}
	a = append(a, boot...)
	if c.NoSerial && c.COM2 {
		return nil, fmt.Errorf("qemu: the console cannot be on COM2 of a machine without serial ports")
	}
	if c.NoSerial {
		a = append(a, "-serial", "none")
	}
	if c.COM2 {
		// An explicit -serial leaves -nographic's monitor on stdio
		// too; mon:stdio keeps it there, multiplexed, as by default.
		a = append(a, "-serial", "null", "-serial", "mon:stdio", "-monitor", "none")
	}
	if c.SPCR != "" {
		if strings.Contains(c.SPCR, ",") {
			return nil, fmt.Errorf("qemu: SPCR file name %q must not contain a comma", c.SPCR)
		}
		a = append(a, "-acpitable", "sig=SPCR,rev=2,data="+c.SPCR)
	}
	iommu := "intel-iommu"
	if c.InterruptRemapping {
		iommu += ",intremap=on"
		if c.EIM {
			iommu += ",eim=on"
		}
	}
	a = append(a,
		"-device", iommu,
		"-netdev", netdev,
		"-device", c.NIC.Device+",netdev=n0,romfile=",
	)
	if c.EHCI {
		a = append(a, "-device", "ich9-usb-ehci1")
	}
	if c.Pcap != "" {
		if strings.Contains(c.Pcap, ",") {
			return nil, fmt.Errorf("qemu: pcap file name %q must not contain a comma", c.Pcap)
		}
		a = append(a, "-object", "filter-dump,id=f0,netdev=n0,file="+c.Pcap)
	}
	return a, nil
}

// Machine is q35 without the chipset's devices ether9 never uses: the
// SATA controller (whose empty DVD drive SeaBIOS probes three times), the
// SMBus, the PS/2 controller and VMware's I/O port. Firmware and the
// enumeration of the guest's PCI functions behind VT-d shrink with them:
// QEMU start to the shim went from 0.215-0.244 s to 0.180-0.207 s, and
// to VT-d on by 40 ms more, three boots each alternated.
const Machine = "q35,sata=off,smbus=off,i8042=off,vmport=off"

var versionRE = regexp.MustCompile(`QEMU emulator version (\d+)\.(\d+)`)

// Version runs `binary --version` and returns the major and minor version.
func Version(binary string) (major, minor int, err error) {
	out, err := exec.Command(binary, "--version").Output()
	if err != nil {
		return 0, 0, err
	}
	m := versionRE.FindSubmatch(out)
	if m == nil {
		return 0, 0, fmt.Errorf("%s --version: unrecognised output %q", binary, firstLine(string(out)))
	}
	major, _ = strconv.Atoi(string(m[1]))
	minor, _ = strconv.Atoi(string(m[2]))
	return major, minor, nil
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// ExtendedInterrupts reports whether binary runs intel-iommu's extended
// interrupt mode under TCG: from QEMU 9.0, which emulates x2APIC there;
// earlier ones stop with "eim=on requires accel=kvm,kernel-irqchip=split".
func ExtendedInterrupts(binary string) bool {
	major, _, err := Version(binary)
	return err == nil && major >= 9
}

// ErrNoQEMU says that QEMU is missing or too old for the NIC.
var ErrNoQEMU = errors.New("QEMU not found")

// Check finds binary on PATH and makes sure it emulates nic.
func Check(binary string, nic NIC) (string, error) {
	path, err := exec.LookPath(binary)
	if err != nil {
		return "", fmt.Errorf("%w: %s is not on PATH: run tools/run (it installs qemu-system-x86 from bookworm-backports) or install QEMU %d or newer",
			ErrNoQEMU, binary, max(nic.MinVer, 8))
	}
	major, minor, err := Version(path)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrNoQEMU, err)
	}
	if major < nic.MinVer {
		return "", fmt.Errorf("%w: QEMU %d.%d has no %s model (needs %d or newer): run tools/run, which installs QEMU from bookworm-backports",
			ErrNoQEMU, major, minor, nic.Device, nic.MinVer)
	}
	return path, nil
}
