//go:build linux

package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ether9/ether9/boot/init/system"
	"github.com/ether9/ether9/drivers/igb"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/probe"
	"github.com/ether9/ether9/drivers/xsk"
	"github.com/ether9/ether9/internal/udpframe"
	"github.com/ether9/ether9/netstack"
	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
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
	xdpHdr   = 14 + 20 + 8
	xdpFCS   = 4
	xdpQueue = 1 // the queue the programs take: not 0, so steering shows
)

// xdpSizes are the table's frame sizes on the wire, FCS included.
var xdpSizes = []int{64, 1500}

// xdpMode returns the value of ether9.xdp on the command line.
func xdpMode(cmdline string) (string, bool) {
	for _, f := range strings.Fields(cmdline) {
		if v, ok := strings.CutPrefix(f, "ether9.xdp="); ok {
			return v, true
		}
	}
	return "", false
}

// xdpFlow is the pusher's UDP flow to the NIC under test: the frame
// length without FCS, and the source port that lands it on queue.
type xdpFlow struct {
	frame int
	sport uint16
	queue int
}

// xdpCount is what one cell measured: frames over took, and those of the
// second half alone, which show the cell kept moving to its end.
type xdpCount struct {
	frames, late uint64
	took         time.Duration
}

// runXDP runs rxdrop, txpush and l2fwd on the NIC under test over the
// copy and zero-copy queue paths and then the netstack path (the stack
// keeps the NIC to the end), at each size, the pusher feeding it, and
// prints a line per cell and the zero-copy / netstack ratio on rxdrop at
// 64 bytes. The NICs' DMA is translated as the system translates it by
// default, and the faults the run caused are reported at its end.
func runXDP(logf func(format string, args ...any), plat system.Platform, mode string) error {
	var dur time.Duration
	switch mode {
	case "quick":
		dur = 600 * time.Millisecond
	case "full":
		dur = 2 * time.Second
	default:
		return fmt.Errorf("ether9.xdp=%q: want quick or full", mode)
	}
	rm := system.NewRemapper(plat, system.DefaultOptions().IOMMU, logf)
	defer rm.ReportFaults()
	pusher, dut, err := xdpNICs(logf, plat, rm)
	if err != nil {
		return err
	}
	for _, n := range []nic.NIC{pusher, dut} {
		if !xdpLinkUp(n, 5*time.Second) {
			return fmt.Errorf("%s: no link after 5s", n.Name())
		}
	}
	sport, err := xdpSteer(logf, pusher, dut, xdpQueue)
	if err != nil {
		return err
	}
	rate := map[string]float64{}
	report := func(t string, size int, path string, c xdpCount) {
		k := float64(c.frames) / c.took.Seconds() / 1e3
		rate[fmt.Sprintf("%s %d %s", t, size, path)] = k
		logf("xdp: %s %d %s %.1f kpps frames %d late %d", t, size, path, k, c.frames, c.late)
	}
	for _, size := range xdpSizes {
		f := xdpFlow{frame: size - xdpFCS, sport: sport, queue: xdpQueue}
		for _, path := range []string{"copy", "zero-copy"} {
			m := xsk.Copy
			if path == "zero-copy" {
				m = xsk.ZeroCopy
			}
			for _, t := range []string{"rxdrop", "txpush", "l2fwd"} {
				c, err := xdpQueueCell(pusher, dut, t, m, f, dur)
				if err != nil {
					return fmt.Errorf("%s %d %s: %w", t, size, path, err)
				}
				report(t, size, path, c)
			}
		}
	}
	// The netstack path runs its cells twice as long: under TCG it moves
	// large frames an order of magnitude slower than the queue paths.
	err = xdpNetstackCells(pusher, dut, sport, 2*dur, func(t string, size int, c xdpCount) { report(t, size, "netstack", c) })
	if err != nil {
		return fmt.Errorf("netstack: %w", err)
	}
	base := rate[fmt.Sprintf("rxdrop %d netstack", xdpSizes[0])]
	if base <= 0 {
		return errors.New("netstack rxdrop measured nothing")
	}
	logf("xdp: ratio %.2f", rate[fmt.Sprintf("rxdrop %d zero-copy", xdpSizes[0])]/base)
	return nil
}

// xdpNICs brings up the drivers, each NIC's DMA translated by the unit
// whose scope holds it, and returns the two hub NICs as queue binders.
func xdpNICs(logf func(format string, args ...any), plat system.Platform, rm *system.Remapper) (pusher, dut nic.NIC, err error) {
	pp := probe.Platform{
		Config:   plat.Config,
		BAR:      plat.MapBAR,
		IOMMUFor: rm.UnitFor,
		Memory:   plat.Memory,
		Clock:    plat.Clock,
		Logf:     logf,
	}
	res, err := probe.Bind(pp)
	if err != nil {
		return nil, nil, err
	}
	rm.ReportIdle()
	if len(rm.Units()) > 0 {
		logf("xdp: iommu translation on")
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

// xdpSteer decides how the pusher's flow reaches queue want of the NIC
// under test and returns the flow's UDP source port. A 2-tuple filter on
// the destination port comes first; QEMU's igb accepts the registers but
// steers by RSS alone (drivers/igb/filter.go), so where probe frames show
// the filter ignored, the source port is chosen so that the flow's
// Toeplitz hash meets want in the redirection table.
func xdpSteer(logf func(format string, args ...any), pusher, dut nic.NIC, want int) (uint16, error) {
	b := dut.(xsk.Binder)
	sport := uint16(40000)
	slot, err := b.Steer(xsk.Filter{UDPPort: xdpPort}, want)
	if err == nil {
		got, err := xdpProbe(pusher, dut, sport)
		if err != nil {
			return 0, err
		}
		if got == want {
			logf("xdp: udp port %d to queue %d by a 2-tuple filter", xdpPort, want)
			return sport, nil
		}
		logf("xdp: the 2-tuple filter for udp port %d was accepted but the flow landed on queue %d", xdpPort, got)
		if err := b.Unsteer(slot); err != nil {
			return 0, err
		}
	} else {
		logf("xdp: %v", err)
	}
	rss, ok := dut.(interface{ QueueOfHash(uint32) int })
	if !ok {
		return 0, fmt.Errorf("%s: no filter and no RSS table to steer by", dut.Name())
	}
	for p := uint32(40000); ; p++ {
		if p > 0xffff {
			return 0, fmt.Errorf("%s: no source port hashes to queue %d", dut.Name(), want)
		}
		if rss.QueueOfHash(igb.Toeplitz(xdpTuple(xdpPusherIP, xdpTestIP, uint16(p), xdpPort))) == want {
			sport = uint16(p)
			break
		}
	}
	got, err := xdpProbe(pusher, dut, sport)
	if err != nil {
		return 0, err
	}
	if got != want {
		return 0, fmt.Errorf("%s: source port %d should hash to queue %d but landed on %d", dut.Name(), sport, want, got)
	}
	logf("xdp: udp source port %d to queue %d by RSS", sport, want)
	return sport, nil
}

// xdpTuple is the RSS hash input of an IPv4 UDP flow.
func xdpTuple(src, dst [4]byte, sport, dport uint16) []byte {
	b := append(append([]byte{}, src[:]...), dst[:]...)
	return binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint16(b, sport), dport)
}

// xdpProbe sends a few frames of the flow from the pusher and returns the
// queue of the NIC under test that received most of them.
func xdpProbe(pusher, dut nic.NIC, sport uint16) (int, error) {
	const probes = 8
	frame := udpframe.Flow{SrcMAC: xdpPusherMAC, DstMAC: xdpTestMAC, Src: xdpPusherIP, Dst: xdpTestIP, SrcPort: sport, DstPort: xdpPort}.
		Put(make([]byte, xdpSizes[0]), xdpSizes[0]-xdpFCS)
	pkts := make([]*nic.TxPacket, probes)
	for i := range pkts {
		pkts[i] = &nic.TxPacket{Data: buffer.MakeWithData(frame)}
	}
	pq := pusher.Queues()[0]
	if n, err := pq.Transmit(pkts); err != nil || n != probes {
		return 0, fmt.Errorf("%s: probe frames: %d of %d sent: %v", pusher.Name(), n, probes, err)
	}
	qs := dut.Queues()
	got := make([]int, len(qs))
	total := 0
	batch := make([]nic.RxPacket, probes)
	for end := time.Now().Add(time.Second); total < probes && time.Now().Before(end); time.Sleep(time.Millisecond) {
		for i, q := range qs {
			n, taken := q.Receive(batch)
			for _, p := range batch[:n] {
				p.Data.Release()
			}
			clear(batch[:n])
			got[i] += n
			total += taken
		}
		pq.Reclaim()
	}
	best := 0
	for i := range got {
		if got[i] > got[best] {
			best = i
		}
	}
	if got[best] == 0 {
		return 0, fmt.Errorf("%s: none of %d probe frames arrived", dut.Name(), probes)
	}
	return best, nil
}

// xsock is one bound queue and the loop that runs a program on it.
type xsock struct {
	b    xsk.Binder
	q    int
	s    *xsk.Socket
	gen  bool // a traffic generator: it yields after every round
	n    atomic.Uint64
	done atomic.Bool
	wg   sync.WaitGroup
}

// xdpEnd is one end of a flow: addresses and UDP port.
type xdpEnd struct {
	mac  [6]byte
	ip   [4]byte
	port uint16
}

// xdpBind takes queue q of b in mode m and runs program t on it: rxdrop,
// txpush of frame-byte frames from src to dst, or l2fwd.
func xdpBind(b xsk.Binder, q int, m xsk.Mode, t string, frame int, src, dst xdpEnd, gen bool) (*xsock, error) {
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
	flow := udpframe.Flow{SrcMAC: src.mac, DstMAC: dst.mac, Src: src.ip, Dst: dst.ip, SrcPort: src.port, DstPort: dst.port}
	for _, f := range free {
		flow.Put(u.Bytes(f, frame), frame)
	}
	if err := b.Bind(q, s, m); err != nil {
		return nil, fmt.Errorf("bind queue %d: %w", q, err)
	}
	x := &xsock{b: b, q: q, s: s, gen: gen}
	x.wg.Add(1)
	go func() {
		defer x.wg.Done()
		x.loop(t, frame, free)
	}()
	return x, nil
}

// loop is the application: it drives its queue with Poll and, when a
// round moved nothing, gives the CPU away (xsk.Idler) instead of spinning.
func (x *xsock) loop(t string, frame int, free []uint64) {
	const batch = 64
	s := x.s
	idle := xsk.Idler{Socket: s, Spins: 64, Sleep: time.Millisecond}
	descs := make([]xsk.Desc, batch)
	addrs := make([]uint64, batch)
	for !x.done.Load() {
		worked := s.Poll(batch) > 0
		switch t {
		case "rxdrop":
			k := s.RX.ConsumeBatch(descs)
			for i := range k {
				addrs[i] = descs[i].Addr
			}
			s.Umem.Fill.ProduceBatch(addrs[:k])
			x.n.Add(uint64(k))
			worked = worked || k > 0
		case "txpush":
			k := s.Umem.Comp.ConsumeBatch(addrs)
			x.n.Add(uint64(k))
			free = append(free, addrs[:k]...)
			m := min(len(free), batch)
			for i := range m {
				descs[i] = xsk.Desc{Addr: free[i], Len: uint32(frame)}
			}
			sent := s.TX.ProduceBatch(descs[:m])
			free = free[sent:]
			worked = worked || k > 0 || sent > 0
		case "l2fwd":
			k := s.Umem.Comp.ConsumeBatch(addrs)
			x.n.Add(uint64(k))
			s.Umem.Fill.ProduceBatch(addrs[:k])
			r := s.RX.ConsumeBatch(descs[:min(s.RX.Len(), s.TX.Free(), batch)])
			for i := range r {
				f := s.Umem.Bytes(descs[i].Addr, int(descs[i].Len))
				var m [6]byte
				copy(m[:], f[:6])
				copy(f[:6], f[6:12])
				copy(f[6:12], m[:])
			}
			s.TX.ProduceBatch(descs[:r])
			worked = worked || k > 0 || r > 0
		}
		idle.Round(worked)
		if x.gen {
			// One CPU runs the generator and the program under test: the
			// generator hands it over after each batch instead of filling
			// the receiver's ring for a whole scheduling slice, the rest
			// of which the receiving NIC would drop.
			runtime.Gosched()
		}
	}
}

func (x *xsock) stop() error {
	x.done.Store(true)
	x.wg.Wait()
	return x.b.Unbind(x.q)
}

// xdpMeasure counts n over d after a warm-up of a quarter of it, and
// separately over d's second half.
func xdpMeasure(d time.Duration, n func() uint64) xdpCount {
	time.Sleep(d / 4)
	n0, t0 := n(), time.Now()
	time.Sleep(d / 2)
	mid := n()
	time.Sleep(d - d/2)
	end := n()
	return xdpCount{frames: end - n0, late: end - mid, took: time.Since(t0)}
}

// xdpQueueCell runs program t in mode m on the queue the flow is steered
// to, the pusher sending to it from a zero-copy queue, and counts frames
// received (rxdrop), sent (txpush) or sent back (l2fwd).
func xdpQueueCell(pusher, dut nic.NIC, t string, m xsk.Mode, f xdpFlow, d time.Duration) (xdpCount, error) {
	src := xdpEnd{xdpPusherMAC, xdpPusherIP, f.sport}
	dst := xdpEnd{xdpTestMAC, xdpTestIP, xdpPort}
	var gen *xsock
	var err error
	if t != "txpush" {
		gen, err = xdpBind(pusher.(xsk.Binder), 0, xsk.ZeroCopy, "txpush", f.frame, src, dst, true)
		if err != nil {
			return xdpCount{}, fmt.Errorf("pusher: %w", err)
		}
	}
	x, err := xdpBind(dut.(xsk.Binder), f.queue, m, t, f.frame, dst, src, false)
	var c xdpCount
	if err == nil {
		c = xdpMeasure(d, x.n.Load)
		err = x.stop()
	}
	if gen != nil {
		err = errors.Join(err, gen.stop())
	}
	return c, err
}

// xdpNetstackCells runs the three programs over a gVisor UDP socket on
// the NIC under test at each size, the pusher feeding it from a zero-copy
// queue.
func xdpNetstackCells(pusher, dut nic.NIC, sport uint16, d time.Duration, report func(string, int, xdpCount)) error {
	st, err := netstack.NewStack(netstack.StackOptions{}, netstack.Interface{
		NIC:   dut,
		Addrs: []netip.Prefix{netip.PrefixFrom(netip.AddrFrom4(xdpTestIP), 24)},
	})
	if err != nil {
		return err
	}
	defer st.Close()
	defer func() {
		for _, ep := range st.Endpoints {
			ep.Attach(nil)
		}
	}()
	id := netstack.NICID(0)
	if e := st.AddStaticNeighbor(id, ipv4.ProtocolNumber, tcpip.AddrFrom4(xdpPusherIP), tcpip.LinkAddress(xdpPusherMAC[:])); e != nil {
		return fmt.Errorf("neighbor: %s", e)
	}
	conn, err := gonet.DialUDP(st.Stack, &tcpip.FullAddress{NIC: id, Addr: tcpip.AddrFrom4(xdpTestIP), Port: xdpPort}, nil, ipv4.ProtocolNumber)
	if err != nil {
		return fmt.Errorf("udp socket: %w", err)
	}
	defer conn.Close()
	for _, size := range xdpSizes {
		frame := size - xdpFCS
		for _, t := range []string{"rxdrop", "txpush", "l2fwd"} {
			var gen *xsock
			if t != "txpush" {
				src := xdpEnd{xdpPusherMAC, xdpPusherIP, sport}
				dst := xdpEnd{xdpTestMAC, xdpTestIP, xdpPort}
				gen, err = xdpBind(pusher.(xsk.Binder), 0, xsk.ZeroCopy, "txpush", frame, src, dst, true)
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
				payload := make([]byte, frame-xdpHdr)
				to := &net.UDPAddr{IP: net.IP(xdpPusherIP[:]), Port: int(sport)}
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
			c := xdpMeasure(d, n.Load)
			cancel()
			wg.Wait()
			if gen != nil {
				if err := gen.stop(); err != nil {
					return fmt.Errorf("%s %d: pusher: %w", t, size, err)
				}
			}
			report(t, size, c)
		}
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
