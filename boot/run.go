package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"

	"github.com/ether9/ether9/boot/qemu"
)

// Guest ports the image serves.
const (
	guestHTTP = 80
	guest9P   = 564
)

// qemuConfig checks QEMU and the NIC and returns the machine to boot p in.
func qemuConfig(o options, p *parts) (qemu.Config, error) {
	nic, err := qemu.LookupNIC(o.nic)
	if err != nil {
		return qemu.Config{}, err
	}
	bin, err := qemu.Check(qemu.Binary, nic)
	if err != nil {
		return qemu.Config{}, err
	}
	c := qemu.Config{
		Binary: bin, Kernel: p.boot, Initrd: p.initrd, Cmdline: p.cmdline, BIOS: p.bios,
		NIC: nic, SMP: o.smp, MemMiB: o.memMiB, Pcap: o.pcap,
		Forward: []qemu.Forward{{Host: o.port, Guest: guestHTTP}},
		// The metal platform owns interrupt delivery and remaps it.
		InterruptRemapping: o.platform == "metal",
	}
	c.EIM = c.InterruptRemapping && qemu.ExtendedInterrupts(bin)
	if o.ninePort != 0 {
		c.Forward = append(c.Forward, qemu.Forward{Host: o.ninePort, Guest: guest9P})
	}
	if p.disk != "" {
		c.Kernel, c.Initrd, c.Cmdline, c.BIOS = "", "", "", ""
		c.Disk, c.Firmware = p.disk, p.firmware
	}
	return c, nil
}

// checkNIC fails early, before anything is built, for a NIC QEMU lacks.
func checkNIC(o options) error {
	nic, err := qemu.LookupNIC(o.nic)
	if err != nil {
		return err
	}
	_, err = qemu.Check(qemu.Binary, nic)
	return err
}

// prepare checks QEMU and the NIC before anything is built, picks a free
// host port when o has none, builds the image with the extra kernel
// words and returns it with the machine to boot it in (the HTTP forward
// first). The caller removes the parts.
func prepare(ctx context.Context, o options, log io.Writer, extra ...string) (*parts, qemu.Config, error) {
	if err := checkNIC(o); err != nil {
		return nil, qemu.Config{}, err
	}
	if o.port == 0 {
		port, err := freePort()
		if err != nil {
			return nil, qemu.Config{}, err
		}
		o.port = port
	}
	p, err := assemble(ctx, o, log, extra...)
	if err != nil {
		return nil, qemu.Config{}, err
	}
	c, err := qemuConfig(o, p)
	if err != nil {
		p.remove()
		return nil, qemu.Config{}, err
	}
	return p, c, nil
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	_, p, _ := net.SplitHostPort(l.Addr().String())
	return strconv.Atoi(p)
}

// boot runs the image in QEMU with the console on this terminal.
func boot(ctx context.Context, o options, log io.Writer) error {
	p, c, err := prepare(ctx, o, log)
	if err != nil {
		return err
	}
	defer p.remove()
	fmt.Fprintf(log, "boot: %s %s on user networking (restrict=on); http://127.0.0.1:%d/ reaches the guest's port %d; Ctrl-A x quits\n",
		c.NIC.Name, c.NIC.Part, c.Forward[0].Host, guestHTTP)
	return qemu.Interactive(ctx, c)
}
