package xdp

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/xsk"
	"github.com/ether9/ether9/internal/udpframe"
	"github.com/ether9/ether9/netstack"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
)

// Config is one run.
type Config struct {
	Test     Test
	Path     Path
	Size     int           // frame size without FCS, 60..1514
	Duration time.Duration // measured time, after a warm-up of a tenth of it
	NIC      string        // driver of the NIC under test: igb (the default) or igc
	Logf     func(string, ...any)
}

// Run builds a rig, runs one sample program on it and measures frames
// per second: frames the application received (rxdrop) or frames that
// reached the far end of the wire (txpush, l2fwd).
func Run(c Config) (res Result, err error) {
	if c.Size < minFrame || c.Size > maxFrame {
		return res, fmt.Errorf("xdp: frame size %d outside %d..%d", c.Size, minFrame, maxFrame)
	}
	if c.Duration <= 0 {
		return res, errors.New("xdp: no duration")
	}
	r, err := NewRig(c.NIC, c.Logf)
	if err != nil {
		return res, err
	}
	var count func() uint64
	var stop func() error
	if c.Path == Netstack {
		count, stop, err = startNetstack(r, c)
	} else {
		count, stop, err = startQueue(r, c)
	}
	if err != nil {
		return res, errors.Join(err, r.Close())
	}
	gen := startGenerator(r, c)
	time.Sleep(c.Duration / 10)
	n0, t0 := count(), time.Now()
	time.Sleep(c.Duration)
	n1, t1 := count(), time.Now()
	gen()
	err = errors.Join(stop(), r.Close())
	return Result{Test: c.Test, Path: c.Path, Size: c.Size, Frames: n1 - n0, Elapsed: t1.Sub(t0)}, err
}

// startGenerator sends frames to the NIC as fast as the wire takes them
// (rxdrop, l2fwd) and returns the function that stops it.
func startGenerator(r *Rig, c Config) func() {
	if c.Test == TxPush {
		return func() {}
	}
	var done atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		f := udpFrame(make([]byte, maxFrame), c.Size, peerMAC, hostMAC, peerIP, hostIP, 0)
		end := r.Wire.B()
		for seq := uint32(0); !done.Load(); seq++ {
			binary.BigEndian.PutUint32(f[udpframe.HeaderLen:], seq) // no UDP checksum: only the payload changes
			end.Send(f)
			if seq%32 == 0 {
				runtime.Gosched()
			}
		}
	}()
	return func() { done.Store(true); wg.Wait() }
}

// startNetstack runs the program over a gVisor UDP socket.
func startNetstack(r *Rig, c Config) (func() uint64, func() error, error) {
	st, err := netstack.NewStack(netstack.StackOptions{}, netstack.Interface{
		NIC:   r.NIC,
		Addrs: []netip.Prefix{netip.PrefixFrom(netip.AddrFrom4(hostIP), 24)},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("xdp: stack: %w", err)
	}
	id := netstack.NICID(0)
	peer := tcpip.AddrFrom4(peerIP)
	if e := st.AddStaticNeighbor(id, ipv4.ProtocolNumber, peer, tcpip.LinkAddress(peerMAC[:])); e != nil {
		st.Close()
		return nil, nil, fmt.Errorf("xdp: neighbor: %s", e)
	}
	conn, err := gonet.DialUDP(st.Stack, &tcpip.FullAddress{NIC: id, Addr: tcpip.AddrFrom4(hostIP), Port: udpPort}, nil, ipv4.ProtocolNumber)
	if err != nil {
		st.Close()
		return nil, nil, fmt.Errorf("xdp: udp socket: %w", err)
	}
	var n atomic.Uint64
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		payload := make([]byte, c.Size-udpframe.HeaderLen)
		to := &net.UDPAddr{IP: net.IP(peerIP[:]), Port: udpPort}
		buf := make([]byte, 2048)
		for ctx.Err() == nil {
			switch c.Test {
			case RxDrop:
				conn.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
				if _, _, err := conn.ReadFrom(buf); err == nil {
					n.Add(1)
				}
			case TxPush:
				conn.WriteTo(payload, to)
			case L2Fwd:
				conn.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
				k, from, err := conn.ReadFrom(buf)
				if err == nil {
					conn.WriteTo(buf[:k], from)
				}
			}
		}
	}()
	count := n.Load
	if c.Test != RxDrop {
		count = r.PeerReceived
	}
	stop := func() error {
		cancel()
		wg.Wait()
		// The socket stays open until the stack is gone, so that frames
		// still arriving do not turn into port-unreachable errors
		// during the shutdown.
		// Poll loops stop before the stack removes the NIC: a loop
		// delivering a frame needs the stack's lock, which RemoveNIC
		// holds while it waits for the loops.
		for _, ep := range st.Endpoints {
			ep.Attach(nil)
		}
		st.Close() // closes the NIC too; Rig.Close then finds it closed
		conn.Close()
		return nil
	}
	return count, stop, nil
}

// startQueue takes over the queue the generator's flow lands on and runs
// the program on it in copy or zero-copy mode.
func startQueue(r *Rig, c Config) (func() uint64, func() error, error) {
	mode := xsk.Copy
	if c.Path == ZeroCopy {
		mode = xsk.ZeroCopy
	}
	q, err := findQueue(r, c)
	if err != nil {
		return nil, nil, err
	}
	u, err := xsk.NewUmem(xsk.UmemConfig{Frames: 4096})
	if err != nil {
		return nil, nil, err
	}
	s, err := xsk.NewSocket(u, 2048)
	if err != nil {
		return nil, nil, err
	}
	// Half the frames wait in the fill ring, the rest for sending.
	var free []uint64
	for i := 0; i < u.Frames(); i++ {
		free = append(free, u.Frame(i))
	}
	k := u.Fill.ProduceBatch(free[:u.Frames()/2])
	free = free[k:]
	if c.Test == TxPush {
		for i, f := range free {
			udpFrame(u.Bytes(f, c.Size), c.Size, hostMAC, peerMAC, hostIP, peerIP, uint32(i))
		}
	}
	if err := r.Binder.Bind(q, s, mode); err != nil {
		return nil, nil, fmt.Errorf("xdp: bind queue %d: %w", q, err)
	}
	var n atomic.Uint64
	var done atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		app(s, c, free, &n, &done)
	}()
	count := n.Load
	if c.Test != RxDrop {
		count = r.PeerReceived
	}
	stop := func() error {
		done.Store(true)
		wg.Wait()
		return r.Binder.Unbind(q)
	}
	return count, stop, nil
}

// app is the application's loop, on one goroutine that also drives the
// queue (Socket.Poll), like an AF_XDP program in busy-poll mode; a round
// that moves nothing gives the CPU away (xsk.Idler) instead of spinning.
func app(s *xsk.Socket, c Config, free []uint64, n *atomic.Uint64, done *atomic.Bool) {
	const batch = 64
	idle := xsk.Idler{Socket: s, Spins: 64, Sleep: time.Millisecond}
	descs := make([]xsk.Desc, batch)
	addrs := make([]uint64, batch)
	for !done.Load() {
		worked := s.Poll(batch) > 0
		switch c.Test {
		case RxDrop:
			k := s.RX.ConsumeBatch(descs)
			for i := 0; i < k; i++ {
				addrs[i] = descs[i].Addr
			}
			s.Umem.Fill.ProduceBatch(addrs[:k])
			n.Add(uint64(k))
			worked = worked || k > 0
		case TxPush:
			k := s.Umem.Comp.ConsumeBatch(addrs)
			free = append(free, addrs[:k]...)
			m := min(len(free), batch)
			for i := 0; i < m; i++ {
				descs[i] = xsk.Desc{Addr: free[i], Len: uint32(c.Size)}
			}
			sent := s.TX.ProduceBatch(descs[:m])
			free = free[sent:]
			worked = worked || k > 0 || sent > 0
		case L2Fwd:
			k := s.Umem.Comp.ConsumeBatch(addrs)
			s.Umem.Fill.ProduceBatch(addrs[:k])
			r := min(s.RX.Len(), s.TX.Free())
			r = s.RX.ConsumeBatch(descs[:min(r, batch)])
			for i := 0; i < r; i++ {
				swapMAC(s.Umem.Bytes(descs[i].Addr, int(descs[i].Len)))
			}
			s.TX.ProduceBatch(descs[:r])
			worked = worked || k > 0 || r > 0
		}
		idle.Round(worked)
	}
}

func swapMAC(f []byte) {
	var t [6]byte
	copy(t[:], f[:6])
	copy(f[:6], f[6:12])
	copy(f[6:12], t[:])
}

// findQueue steers the generator's UDP port to queue 0 where the device
// has 2-tuple filters, then checks with a few frames where the flow
// really lands (RSS decides where it has none).
func findQueue(r *Rig, c Config) (int, error) {
	if _, err := r.Binder.Steer(xsk.Filter{UDPPort: udpPort}, 0); err != nil && c.Logf != nil {
		c.Logf("xdp: steer: %v", err)
	}
	qs := r.NIC.Queues()
	before := make([]uint64, len(qs))
	for i := range qs {
		before[i], _ = r.Stat(fmt.Sprintf("q%d_rx_frames", i))
	}
	buf := make([]byte, maxFrame)
	batch := make([]nic.RxPacket, 64)
	for i := 0; i < 8; i++ {
		r.Wire.B().Send(udpFrame(buf, c.Size, peerMAC, hostMAC, peerIP, hostIP, uint32(i)))
		for _, q := range qs {
			n, _ := q.Receive(batch)
			for _, p := range batch[:n] {
				p.Data.Release()
			}
			clear(batch[:n])
		}
	}
	best, most := -1, uint64(0)
	for i := range qs {
		v, _ := r.Stat(fmt.Sprintf("q%d_rx_frames", i))
		if d := v - before[i]; d > most {
			best, most = i, d
		}
	}
	if best < 0 {
		return 0, errors.New("xdp: no queue received the probe frames")
	}
	return best, nil
}
