//go:build linux

package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ether9/ether9/boot/init/system"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/probe"
	"github.com/ether9/ether9/drivers/xsk"
	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/acpi"
	"github.com/ether9/ether9/kernel/iommu"
	"github.com/ether9/ether9/netstack"
	"github.com/ether9/ether9/pci"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
)

// The two NICs joined by a hub, known by the MAC addresses the boot
// command gives them: the pusher generates, the NIC under test runs the
// program.
var (
	xdpPusherMAC = [6]byte{0x02, 0x00, 0x00, 0x00, 0x00, 0x0a}
	xdpTestMAC   = [6]byte{0x02, 0x00, 0x00, 0x00, 0x00, 0x0b}
	xdpPusherIP  = [4]byte{10, 9, 0, 1}
	xdpTestIP    = [4]byte{10, 9, 0, 2}
)

const (
	xdpPort  = 9 // discard
	xdpFrame = 60
	xdpHdr   = 14 + 20 + 8
)

// xdpMode returns the value of ether9.xdp on the command line.
func xdpMode(cmdline string) (string, bool) {
	for _, f := range strings.Fields(cmdline) {
		if v, ok := strings.CutPrefix(f, "ether9.xdp="); ok {
			return v, true
		}
	}
	return "", false
}

// runXDP runs rxdrop, txpush and l2fwd on the NIC under test over the
// copy and zero-copy queue paths and then the netstack path (the stack
// keeps the NIC to the end), the pusher feeding it, and prints a line
// per cell and the zero-copy / netstack ratio on rxdrop.
func runXDP(con *console, plat system.Platform, mode string) error {
	var dur time.Duration
	switch mode {
	case "quick":
		dur = 200 * time.Millisecond
	case "full":
		dur = 2 * time.Second
	default:
		return fmt.Errorf("ether9.xdp=%q: want quick or full", mode)
	}
	pusher, dut, err := xdpNICs(con, plat)
	if err != nil {
		return err
	}
	for _, n := range []nic.NIC{pusher, dut} {
		if !xdpLinkUp(n, 5*time.Second) {
			return fmt.Errorf("%s: no link after 5s", n.Name())
		}
	}
	rate := map[string]float64{}
	report := func(t, path string, frames uint64, took time.Duration) {
		k := float64(frames) / took.Seconds() / 1e3
		rate[t+" "+path] = k
		con.logf("xdp: %s %d %s %.1f kpps", t, xdpFrame+4, path, k)
	}
	for _, path := range []string{"copy", "zero-copy"} {
		m := xsk.Copy
		if path == "zero-copy" {
			m = xsk.ZeroCopy
		}
		for _, t := range []string{"rxdrop", "txpush", "l2fwd"} {
			n, took, err := xdpQueueCell(pusher, dut, t, m, dur)
			if err != nil {
				return fmt.Errorf("%s %s: %w", t, path, err)
			}
			report(t, path, n, took)
		}
	}
	if err := xdpNetstackCells(pusher, dut, dur, func(t string, n uint64, took time.Duration) { report(t, "netstack", n, took) }); err != nil {
		return fmt.Errorf("netstack: %w", err)
	}
	base := rate["rxdrop netstack"]
	if base <= 0 {
		return errors.New("netstack rxdrop measured nothing")
	}
	con.logf("xdp: ratio %.2f", rate["rxdrop zero-copy"]/base)
	return nil
}

// xdpNICs brings up translation and the drivers and returns the two hub
// NICs as queue binders.
func xdpNICs(con *console, plat system.Platform) (pusher, dut nic.NIC, err error) {
	pp := probe.Platform{
		Config: plat.Config,
		BAR:    func(f *pci.Function, bar int) (kernel.Regs, error) { return plat.MapBAR(f.Addr, bar) },
		Memory: plat.Memory,
		Clock:  plat.Clock,
		Logf:   con.logf,
	}
	if plat.DMAR != nil {
		u, err := xdpUnit(plat)
		if err != nil {
			return nil, nil, fmt.Errorf("iommu: %w", err)
		}
		pp.IOMMU = u
		con.logf("xdp: iommu translation on")
	}
	res, err := probe.Bind(pp)
	if err != nil {
		return nil, nil, err
	}
	for _, n := range res.NICs() {
		switch n.MAC() {
		case xdpPusherMAC:
			pusher = n
		case xdpTestMAC:
			dut = n
		}
	}
	if pusher == nil || dut == nil {
		return nil, nil, fmt.Errorf("want NICs %x and %x on the hub; %d NICs came up", xdpPusherMAC, xdpTestMAC, len(res.NICs()))
	}
	for _, n := range []nic.NIC{pusher, dut} {
		if _, ok := n.(xsk.Binder); !ok {
			return nil, nil, fmt.Errorf("%s: driver offers no queue takeover", n.Name())
		}
	}
	return pusher, dut, nil
}

func xdpUnit(plat system.Platform) (*iommu.Unit, error) {
	d, err := acpi.ParseDMAR(plat.DMAR)
	if err != nil {
		return nil, err
	}
	drhd, ok := d.UnitFor(0, 0, 0, 0)
	if !ok {
		return nil, errors.New("no unit for segment 0")
	}
	regs, err := plat.MapUnit(drhd.Base)
	if err != nil {
		return nil, err
	}
	u, err := iommu.New(regs, plat.Memory, iommu.Options{Clock: plat.Clock})
	if err != nil {
		return nil, err
	}
	return u, u.Enable()
}

// xdpUDP builds a UDP/IPv4 frame of xdpFrame bytes.
func xdpUDP(b []byte, srcMAC, dstMAC [6]byte, src, dst [4]byte) []byte {
	f := b[:xdpFrame]
	clear(f)
	copy(f, dstMAC[:])
	copy(f[6:], srcMAC[:])
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	ip := f[14:34]
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], uint16(xdpFrame-14))
	ip[8], ip[9] = 64, 17
	copy(ip[12:], src[:])
	copy(ip[16:], dst[:])
	binary.BigEndian.PutUint16(ip[10:], ^checksum.Checksum(ip, 0))
	binary.BigEndian.PutUint16(f[34:], 40000)
	binary.BigEndian.PutUint16(f[36:], xdpPort)
	binary.BigEndian.PutUint16(f[38:], uint16(xdpFrame-34))
	return f
}

// xsock is one bound queue and the loop that runs a program on it.
type xsock struct {
	b    xsk.Binder
	q    int
	s    *xsk.Socket
	n    atomic.Uint64
	done atomic.Bool
	wg   sync.WaitGroup
}

// xdpBind takes queue q of b in mode m and runs program t on it: rxdrop,
// txpush of frames from src to dst, or l2fwd.
func xdpBind(b xsk.Binder, q int, m xsk.Mode, t string, src, dst [6]byte, srcIP, dstIP [4]byte) (*xsock, error) {
	u, err := xsk.NewUmem(xsk.UmemConfig{Frames: 1024})
	if err != nil {
		return nil, err
	}
	s, err := xsk.NewSocket(u, 512)
	if err != nil {
		return nil, err
	}
	var free []uint64
	for i := 0; i < u.Frames(); i++ {
		free = append(free, u.Frame(i))
	}
	free = free[u.Fill.ProduceBatch(free[:u.Frames()/2]):]
	for _, f := range free {
		xdpUDP(u.Bytes(f, xdpFrame), src, dst, srcIP, dstIP)
	}
	if err := b.Bind(q, s, m); err != nil {
		return nil, fmt.Errorf("bind queue %d: %w", q, err)
	}
	x := &xsock{b: b, q: q, s: s}
	x.wg.Add(1)
	go func() {
		defer x.wg.Done()
		x.loop(t, free)
	}()
	return x, nil
}

func (x *xsock) loop(t string, free []uint64) {
	const batch = 64
	s := x.s
	descs := make([]xsk.Desc, batch)
	addrs := make([]uint64, batch)
	for !x.done.Load() {
		s.Poll(batch)
		switch t {
		case "rxdrop":
			k := s.RX.ConsumeBatch(descs)
			for i := range k {
				addrs[i] = descs[i].Addr
			}
			s.Umem.Fill.ProduceBatch(addrs[:k])
			x.n.Add(uint64(k))
		case "txpush":
			k := s.Umem.Comp.ConsumeBatch(addrs)
			x.n.Add(uint64(k))
			free = append(free, addrs[:k]...)
			m := min(len(free), batch)
			for i := range m {
				descs[i] = xsk.Desc{Addr: free[i], Len: xdpFrame}
			}
			free = free[s.TX.ProduceBatch(descs[:m]):]
		case "l2fwd":
			k := s.Umem.Comp.ConsumeBatch(addrs)
			x.n.Add(uint64(k))
			s.Umem.Fill.ProduceBatch(addrs[:k])
			k = s.RX.ConsumeBatch(descs[:min(s.RX.Len(), s.TX.Free(), batch)])
			for i := range k {
				f := s.Umem.Bytes(descs[i].Addr, int(descs[i].Len))
				var m [6]byte
				copy(m[:], f[:6])
				copy(f[:6], f[6:12])
				copy(f[6:12], m[:])
			}
			s.TX.ProduceBatch(descs[:k])
		}
	}
}

func (x *xsock) stop() error {
	x.done.Store(true)
	x.wg.Wait()
	return x.b.Unbind(x.q)
}

// xdpMeasure counts n over d after a warm-up of a quarter of it.
func xdpMeasure(d time.Duration, n func() uint64) (uint64, time.Duration) {
	time.Sleep(d / 4)
	n0, t0 := n(), time.Now()
	time.Sleep(d)
	return n() - n0, time.Since(t0)
}

// xdpQueueCell runs program t on every queue of the NIC under test (the
// flow lands on one of them by RSS) in mode m, the pusher sending to it
// from a zero-copy queue, and counts frames received (rxdrop) or sent.
func xdpQueueCell(pusher, dut nic.NIC, t string, m xsk.Mode, d time.Duration) (uint64, time.Duration, error) {
	var gen *xsock
	var err error
	if t != "txpush" {
		gen, err = xdpBind(pusher.(xsk.Binder), 0, xsk.ZeroCopy, "txpush", xdpPusherMAC, xdpTestMAC, xdpPusherIP, xdpTestIP)
		if err != nil {
			return 0, 0, fmt.Errorf("pusher: %w", err)
		}
	}
	b := dut.(xsk.Binder)
	queues := b.NumQueues()
	if t == "txpush" {
		queues = 1
	}
	var socks []*xsock
	for q := range queues {
		x, e := xdpBind(b, q, m, t, xdpTestMAC, xdpPusherMAC, xdpTestIP, xdpPusherIP)
		if e != nil {
			err = e
			break
		}
		socks = append(socks, x)
	}
	var n uint64
	var took time.Duration
	if err == nil {
		n, took = xdpMeasure(d, func() (v uint64) {
			for _, x := range socks {
				v += x.n.Load()
			}
			return v
		})
	}
	if gen != nil {
		err = errors.Join(err, gen.stop())
	}
	for _, x := range socks {
		err = errors.Join(err, x.stop())
	}
	return n, took, err
}

// xdpNetstackCells runs the three programs over a gVisor UDP socket on
// the NIC under test, the pusher feeding it from a zero-copy queue.
func xdpNetstackCells(pusher, dut nic.NIC, d time.Duration, report func(string, uint64, time.Duration)) error {
	st, err := netstack.NewStack(netstack.StackOptions{}, netstack.Interface{
		NIC:   dut,
		Addrs: []netip.Prefix{netip.PrefixFrom(netip.AddrFrom4(xdpTestIP), 24)},
	})
	if err != nil {
		return err
	}
	defer st.Close()
	id := netstack.NICID(0)
	if e := st.AddStaticNeighbor(id, ipv4.ProtocolNumber, tcpip.AddrFrom4(xdpPusherIP), tcpip.LinkAddress(xdpPusherMAC[:])); e != nil {
		return fmt.Errorf("neighbor: %s", e)
	}
	conn, err := gonet.DialUDP(st.Stack, &tcpip.FullAddress{NIC: id, Addr: tcpip.AddrFrom4(xdpTestIP), Port: xdpPort}, nil, ipv4.ProtocolNumber)
	if err != nil {
		return fmt.Errorf("udp socket: %w", err)
	}
	defer conn.Close()
	for _, t := range []string{"rxdrop", "txpush", "l2fwd"} {
		var gen *xsock
		if t != "txpush" {
			gen, err = xdpBind(pusher.(xsk.Binder), 0, xsk.ZeroCopy, "txpush", xdpPusherMAC, xdpTestMAC, xdpPusherIP, xdpTestIP)
			if err != nil {
				return fmt.Errorf("pusher: %w", err)
			}
		}
		var n atomic.Uint64
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			payload := make([]byte, xdpFrame-xdpHdr)
			to := &net.UDPAddr{IP: net.IP(xdpPusherIP[:]), Port: xdpPort}
			buf := make([]byte, 2048)
			for ctx.Err() == nil {
				if t == "txpush" {
					if _, err := conn.WriteTo(payload, to); err == nil {
						n.Add(1)
					}
					continue
				}
				conn.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
				k, from, err := conn.ReadFrom(buf)
				if err != nil {
					continue
				}
				if t == "rxdrop" {
					n.Add(1)
				} else if _, err := conn.WriteTo(buf[:k], from); err == nil {
					n.Add(1)
				}
			}
		}()
		frames, took := xdpMeasure(d, n.Load)
		cancel()
		wg.Wait()
		if gen != nil {
			if err := gen.stop(); err != nil {
				return fmt.Errorf("%s: pusher: %w", t, err)
			}
		}
		report(t, frames, took)
	}
	for _, ep := range st.Endpoints {
		ep.Attach(nil)
	}
	return nil
}

// xdpLinkUp waits up to d for n's link.
func xdpLinkUp(n nic.NIC, d time.Duration) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if n.Link().Up {
			return true
		}
	}
	return n.Link().Up
}
