// Package simmachine runs ether9 as an ordinary process on the simulated
// machine: NIC models (82574L, 82576 or I225) behind the VT-d model on a
// simulated PCI bus, each cabled by its own simulated wire to a host-side
// gVisor stack (a peer), with TCP connections to 127.0.0.1:PORT forwarded
// through the first peer to the machine. The system code is the very code
// PID 1 runs.
package simmachine

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"

	"github.com/ether9/ether9/boot/init/system"
	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/m82574"
	"github.com/ether9/ether9/kernel/sim/m82576"
	"github.com/ether9/ether9/kernel/sim/mi225"
	"github.com/ether9/ether9/kernel/sim/vtd"
	"github.com/ether9/ether9/kernel/sim/wire"
	"github.com/ether9/ether9/pci"
)

// NICAddr is where the first NIC sits, as QEMU puts its first -device;
// NIC i sits at device 2+i.
var NICAddr = pci.Addr{Bus: 0, Dev: 2, Fn: 0}

// The addresses of QEMU's user network on the first wire, so both
// platforms look alike. Wire i uses 10.0.(2+i).0/24 and fd00:0:0:(2+i)::/64
// (Addrs).
var (
	GuestAddr = netip.MustParsePrefix("10.0.2.15/24")
	PeerAddr  = netip.MustParsePrefix("10.0.2.2/24")
)

// Families are the NIC families the simulated machine has models of.
var Families = []string{"e1000e", "igb", "igc"}

// Addrs are the machine's and the peer's addresses on wire i: IPv4 and
// IPv6.
func Addrs(i int) (guest, peer []netip.Prefix) {
	b := byte(2 + i)
	return []netip.Prefix{
			netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 0, b, 15}), 24),
			netip.PrefixFrom(netip.AddrFrom16([16]byte{0: 0xfd, 7: b, 15: 0x15}), 64),
		}, []netip.Prefix{
			netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 0, b, 2}), 24),
			netip.PrefixFrom(netip.AddrFrom16([16]byte{0: 0xfd, 7: b, 15: 0x02}), 64),
		}
}

// Config describes a simulated run.
type Config struct {
	// Listen is the host address forwarded to the machine's HTTP port,
	// "127.0.0.1:8080"; "127.0.0.1:0" picks a free port. Empty: no forward.
	Listen string
	// Options are the machine's ether9.* parameters. The zero value means
	// the defaults with static addresses (the peers run no DHCP server).
	Options *system.Options
	// VTd configures the VT-d model; the zero value is QEMU's unit.
	VTd vtd.Config
	// CheckOwnership makes the memory track who owns each DMA byte
	// (sim.Config.CheckOwnership): misuses are in Machine.Mem.Errors.
	CheckOwnership bool
	// NICs are the families of the machine's NICs (Families), each on
	// its own wire with its own peer; empty means one e1000e.
	NICs []string
	// Personality of an e1000e model; the zero value is the 82574L.
	Personality m82574.Personality
	// Pcap, if set, records the first wire.
	Pcap io.Writer
	// Logf gets the machine's console lines.
	Logf func(format string, args ...any)
}

// Model is a NIC model on the simulated bus.
type Model interface {
	Attach(p wire.Port)
}

// Host is a simulated machine and its surroundings.
type Host struct {
	Machine *sim.Machine
	// Models are the NIC models, in bus order; Wires and Peers are
	// theirs.
	Models []Model
	Wires  []*wire.Wire
	Peers  []*Peer
	// NIC is the first model when it is an 82574; Wire and Peer are the
	// first wire and peer.
	NIC    *m82574.NIC
	Wire   *wire.Wire
	Peer   *Peer
	System *system.System
	// Forward is the host listener, nil without one.
	Forward net.Listener

	cfg    Config
	ctx    context.Context
	cancel context.CancelFunc
}

// Options are the defaults of a simulated machine: every NIC with its
// static addresses (Addrs), the first peer as the gateway, no DHCP.
func Options(nics int) system.Options {
	opt := system.DefaultOptions()
	opt.DHCP = false
	g, p := Addrs(0)
	opt.IP, opt.Gateway = g[0], p[0].Addr()
	opt.NICs = map[int]system.NICOptions{0: {Addrs: g[1:]}}
	for i := 1; i < nics; i++ {
		g, _ := Addrs(i)
		opt.NICs[i] = system.NICOptions{Addrs: g}
	}
	return opt
}

// New builds the machine, its NIC models, wires and peers; Boot brings
// ether9 up on it.
func New(ctx context.Context, cfg Config) (*Host, error) {
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if cfg.VTd == (vtd.Config{}) {
		cfg.VTd = vtd.QEMU()
	}
	if len(cfg.NICs) == 0 {
		cfg.NICs = []string{"e1000e"}
	}
	m, err := sim.New(sim.Config{VTd: cfg.VTd, CheckOwnership: cfg.CheckOwnership})
	if err != nil {
		return nil, fmt.Errorf("simmachine: %w", err)
	}
	h := &Host{Machine: m, cfg: cfg}
	h.ctx, h.cancel = context.WithCancel(ctx)
	for i, fam := range cfg.NICs {
		if err := h.plug(i, fam); err != nil {
			h.Close()
			return nil, err
		}
	}
	h.Wire, h.Peer = h.Wires[0], h.Peers[0]
	h.NIC, _ = h.Models[0].(*m82574.NIC)
	return h, nil
}

// plug puts NIC i of family fam on the bus and cables it to a peer.
func (h *Host) plug(i int, fam string) error {
	a := pci.Addr{Bus: NICAddr.Bus, Dev: NICAddr.Dev + uint8(i), Fn: 0}
	mac := [6]byte{0x52, 0x54, 0x00, 0x12, 0x34, 0x56 + byte(i)}
	dma, irq := h.Machine.Port(a), h.Machine.IRQ(a)
	// DeferRx: frames from the wire reach the ring when the driver next
	// touches the device, on the driver's goroutine, as one CPU sees its
	// NIC; the race detector then sees the ring's accesses ordered.
	var model interface {
		Model
		sim.Device
	}
	var err error
	switch fam {
	case "e1000e":
		model, err = m82574.New(m82574.Options{Personality: h.cfg.Personality, MAC: mac, DeferRx: true}, dma, irq)
	case "igb":
		model, err = m82576.New(m82576.Options{MAC: mac, DeferRx: true}, dma, irq)
	case "igc":
		model, err = mi225.New(mi225.Options{MAC: mac, DeferRx: true}, dma, irq)
	default:
		return fmt.Errorf("simmachine: no simulated %q model (have %v)", fam, Families)
	}
	if err != nil {
		return fmt.Errorf("simmachine: %w", err)
	}
	if err := h.Machine.Bus.Add(a, model); err != nil {
		return fmt.Errorf("simmachine: plug %s in at %v: %w", fam, a, err)
	}
	wo := wire.Options{}
	if i == 0 && h.cfg.Pcap != nil {
		wo.Pcap = h.cfg.Pcap
	}
	w, err := wire.New(wo)
	if err != nil {
		return fmt.Errorf("simmachine: %w", err)
	}
	model.Attach(w.A())
	guest, addrs := Addrs(i)
	peer, err := NewPeer(w.B(), [6]byte{0x52, 0x55, 0x0a, 0x00, byte(2 + i), 0x02}, addrs, guest)
	if err != nil {
		return err
	}
	h.Models, h.Wires, h.Peers = append(h.Models, model), append(h.Wires, w), append(h.Peers, peer)
	return nil
}

// Boot brings ether9 up on the machine with opt, its lines going to
// logf. The system stops with the context given to New, or Close.
func (h *Host) Boot(opt system.Options, logf func(format string, args ...any)) (*system.System, error) {
	sys, err := system.Start(h.ctx, Platform(h.Machine), opt, logf)
	if err != nil {
		return nil, fmt.Errorf("simmachine: %w", err)
	}
	h.System = sys
	return sys, nil
}

// Context ends when the host is closed.
func (h *Host) Context() context.Context { return h.ctx }

// Listen forwards TCP connections accepted on the host address to port
// of the machine's first address, through the first peer: what QEMU's
// hostfwd does. The forward stops with Close.
func (h *Host) Listen(addr string, port uint16) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("simmachine: forward: %w", err)
	}
	guest, _ := Addrs(0)
	to := netip.AddrPortFrom(guest[0].Addr(), port)
	if h.System != nil && h.System.Options().IP.IsValid() {
		to = netip.AddrPortFrom(h.System.Options().IP.Addr(), port)
	}
	context.AfterFunc(h.ctx, func() { ln.Close() })
	go forward(h.ctx, ln, h.Peer, to, h.cfg.Logf)
	h.cfg.Logf("forward: %v -> %v", ln.Addr(), to)
	return ln, nil
}

// Start builds the machine, brings ether9 up on it and serves the status
// page on its HTTP port, forwarded from cfg.Listen.
func Start(ctx context.Context, cfg Config) (*Host, error) {
	h, err := New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	opt := Options(len(h.Models))
	if cfg.Options != nil {
		opt = *cfg.Options
	}
	sys, err := h.Boot(opt, h.cfg.Logf)
	if err != nil {
		h.Close()
		return nil, err
	}
	sys.Go(h.ctx, "http", func(ctx context.Context) error {
		ln, err := gonet.ListenTCP(sys.Stack().Stack, tcpip.FullAddress{Port: uint16(opt.HTTPPort)}, ipv4.ProtocolNumber)
		if err != nil {
			return fmt.Errorf("listen :%d: %w", opt.HTTPPort, err)
		}
		return sys.ServeStatus(ctx, ln)
	})
	if cfg.Listen != "" {
		if h.Forward, err = h.Listen(cfg.Listen, uint16(opt.HTTPPort)); err != nil {
			h.Close()
			return nil, err
		}
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
		MapBAR:  func(f *pci.Function, bar int) (kernel.Regs, error) { return m.Bus.Regs(f.Addr, bar) },
		IRQ:     func(a pci.Addr) kernel.Waiter { return m.IRQ(a) },
		MSI:     m.MSI,
		// The machine's VT-d model remaps the messages of NICs with
		// MSI-X, as the metal platform's unit does; a line (INTx) is no
		// message and stays as it is.
		RemapInterrupts: true,
		// Nothing runs beneath the simulated machine either.
		AfterFirmware: true,
	}
}

// Close stops the system, the forward and the peers.
func (h *Host) Close() {
	h.cancel()
	if h.Forward != nil {
		h.Forward.Close()
	}
	if h.System != nil {
		h.System.Wait()
		h.System.Close()
	}
	for _, p := range h.Peers {
		p.Close()
	}
}
