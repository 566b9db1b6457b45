// Package simmachine runs ether9 as an ordinary process on the simulated
// machine: an 82574L model behind the VT-d model on a simulated PCI bus,
// cabled by the simulated wire to a host-side gVisor stack, with TCP
// connections to 127.0.0.1:PORT forwarded through that stack to the
// machine's HTTP server. The system code is the very code PID 1 runs.
package simmachine

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"

	"github.com/ether9/ether9/boot/init/system"
	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/m82574"
	"github.com/ether9/ether9/kernel/sim/vtd"
	"github.com/ether9/ether9/kernel/sim/wire"
	"github.com/ether9/ether9/pci"
)

// NICAddr is where the NIC sits, as QEMU puts its first -device.
var NICAddr = pci.Addr{Bus: 0, Dev: 2, Fn: 0}

// The addresses of QEMU's user network, so both platforms look alike.
var (
	GuestAddr = netip.MustParsePrefix("10.0.2.15/24")
	PeerAddr  = netip.MustParsePrefix("10.0.2.2/24")
	peerMAC   = [6]byte{0x52, 0x55, 0x0a, 0x00, 0x02, 0x02}
)

// Config describes a simulated run.
type Config struct {
	// Listen is the host address forwarded to the machine's HTTP port,
	// "127.0.0.1:8080"; "127.0.0.1:0" picks a free port. Empty: no forward.
	Listen string
	// Options are the machine's ether9.* parameters. The zero value means
	// the defaults with a static address (the peer runs no DHCP server).
	Options *system.Options
	// VTd configures the VT-d model; the zero value is QEMU's unit.
	VTd vtd.Config
	// Personality of the NIC model; the zero value is the 82574L.
	Personality m82574.Personality
	// Pcap, if set, records the wire.
	Pcap io.Writer
	// Logf gets the machine's console lines.
	Logf func(format string, args ...any)
}

// Host is a running simulated machine and its surroundings.
type Host struct {
	Machine *sim.Machine
	NIC     *m82574.NIC
	Wire    *wire.Wire
	Peer    *Peer
	System  *system.System
	// Forward is the host listener, nil without one.
	Forward net.Listener

	cancel context.CancelFunc
}

// Start builds the machine and brings ether9 up on it.
func Start(ctx context.Context, cfg Config) (*Host, error) {
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if cfg.VTd == (vtd.Config{}) {
		cfg.VTd = vtd.QEMU()
	}
	opt := system.DefaultOptions()
	opt.IP, opt.Gateway, opt.DHCP = GuestAddr, PeerAddr.Addr(), false
	if cfg.Options != nil {
		opt = *cfg.Options
	}

	m, err := sim.New(sim.Config{VTd: cfg.VTd})
	if err != nil {
		return nil, fmt.Errorf("simmachine: %w", err)
	}
	// DeferRx: frames from the wire reach the ring when the driver next
	// touches the device, on the driver's goroutine, as one CPU sees its
	// NIC; the race detector then sees the ring's accesses ordered.
	model, err := m82574.New(m82574.Options{Personality: cfg.Personality, DeferRx: true}, m.Port(NICAddr), m.IRQ(NICAddr))
	if err != nil {
		return nil, fmt.Errorf("simmachine: %w", err)
	}
	if err := m.Bus.Add(NICAddr, model); err != nil {
		return nil, fmt.Errorf("simmachine: plug NIC in at %v: %w", NICAddr, err)
	}
	w, err := wire.New(wire.Options{Pcap: cfg.Pcap})
	if err != nil {
		return nil, fmt.Errorf("simmachine: %w", err)
	}
	model.Attach(w.A())
	peer, err := NewPeer(w.B(), peerMAC, PeerAddr)
	if err != nil {
		return nil, err
	}
	h := &Host{Machine: m, NIC: model, Wire: w, Peer: peer}
	ctx, h.cancel = context.WithCancel(ctx)

	sys, err := system.Start(ctx, Platform(m), opt, cfg.Logf)
	if err != nil {
		h.Close()
		return nil, fmt.Errorf("simmachine: %w", err)
	}
	h.System = sys
	if cfg.Listen != "" {
		ln, err := net.Listen("tcp", cfg.Listen)
		if err != nil {
			h.Close()
			return nil, fmt.Errorf("simmachine: forward: %w", err)
		}
		h.Forward = ln
		to := netip.AddrPortFrom(opt.IP.Addr(), uint16(opt.HTTPPort))
		go forward(ctx, ln, peer, to, cfg.Logf)
		cfg.Logf("forward: %v -> %v", ln.Addr(), to)
	}
	return h, nil
}

// Platform is the system's view of a simulated machine.
func Platform(m *sim.Machine) system.Platform {
	return system.Platform{
		Name:    "sim",
		Config:  m.Bus,
		Memory:  m.Mem,
		Clock:   m.Clock,
		DMAR:    m.DMAR(),
		MapUnit: m.UnitRegs,
		MapBAR:  m.Bus.Regs,
		IRQ:     func(a pci.Addr) kernel.Waiter { return m.IRQ(a) },
	}
}

// Close stops the system, the forward and the peer.
func (h *Host) Close() {
	h.cancel()
	if h.Forward != nil {
		h.Forward.Close()
	}
	if h.System != nil {
		h.System.Wait()
		h.System.Close()
	}
	h.Peer.Close()
}
