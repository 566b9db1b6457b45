package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"time"

	"github.com/ether9/ether9/drivers/igc"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/probe"
	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/iommu"
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/m82576"
	"github.com/ether9/ether9/kernel/sim/mi225"
	"github.com/ether9/ether9/kernel/sim/vtd"
	"github.com/ether9/ether9/kernel/sim/wire"
	"github.com/ether9/ether9/netstack"
	"github.com/ether9/ether9/pci"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/transport/udp"
	"gvisor.dev/gvisor/pkg/waiter"
)

func init() {
	commands["buildskb"] = command{"Mpps for 64 B single-queue RX, build vs construct, to the dispatcher and to a UDP socket (igc build_skb seed)", runBuildSkb}
}

// The buildskb benchmark reproduces the igc build_skb seed's figure: the
// receive rate of 64-byte frames on one queue of an I225, with packets
// built around their receive buffers against packets constructed from a
// copied head, in one run.
//
// What is timed: Endpoint.Poll, that is the driver's RX clean (descriptor
// read, sync, build or construct, page flip, refill, tail write) and the
// endpoint's delivery, either to a dispatcher that counts and drops or
// through the whole gVisor stack (IPv4, UDP) into a bound UDP endpoint's
// receive queue. What is not: the model's work. Each round the wire's far
// end sends a batch of frames first, so the I225 model DMAs them into the
// ring (through the VT-d model) before the clock starts; the UDP
// endpoint's queue is drained after it stops. Build and construct rigs
// alternate round by round so both see the same machine load; each cell
// reports the median round.
//
// The driver-alone rows time the driver's poll with a delivery that
// offers each packet's buffer back (nic.RxPacket.Recycle) and releases
// it, as the endpoint does when the stack is done with a packet.
//
// Reading the result: gVisor's views are copy-on-write, so a packet whose
// headers sit in a chunk somebody else still holds is copied at the
// stack's first header pull-up. The build layout hands each frame up in a
// 2 KiB chunk of its own, and construct copies the headers into a head of
// its own, so neither is copied again on the way to the dispatcher. A
// built packet's chunk comes back to the ring as the packet is released,
// if nobody else holds it, and is re-armed under its old mapping with no
// trip through gVisor's pool (which clears 2 KiB per chunk). gVisor's UDP
// endpoint clones each packet it queues and then reads its headers, so on
// the socket path every packet's chunk is copied whole, 2 KiB for build
// against construct's 64 B head, and the clone, not the packet, carries
// the chunk to the reader: build pays there. The "drv copies" column
// counts only the driver's copies; "reuse" counts buffers armed again
// without a new mapping (half-page flips, chunks back from the pool or
// back from released packets).

// bsPath is what a delivered packet meets.
type bsPath uint8

const (
	toDispatcher bsPath = iota // a dispatcher that counts and drops
	toSocket                   // the gVisor stack and a bound UDP endpoint
	toRelease                  // no endpoint: the driver's poll releases each packet
	toLateSocket               // as toSocket, its reader a few polls behind
)

func (p bsPath) String() string {
	switch p {
	case toSocket:
		return "udp socket"
	case toLateSocket:
		return "late reader"
	case toRelease:
		return "driver"
	}
	return "dispatcher"
}

type bsParams struct {
	frames, batch int
	iommu         string // "strict" or "off"
}

// rigFlags declares the flags every rig benchmark takes (-quick, -frames,
// -iommu) on fs; once fs is parsed, params checks them and gives the
// run's parameters, full or quick frames per cell.
func rigFlags(fs *flag.FlagSet, full, short int) (params func(batch int) (bsParams, error)) {
	quick := fs.Bool("quick", false, fmt.Sprintf("a short run: %d frames per cell instead of %d", short, full))
	frames := fs.Int("frames", 0, "frames per cell (overrides -quick)")
	mmu := fs.String("iommu", "strict", "VT-d translation for the NIC: strict or off")
	return func(batch int) (bsParams, error) {
		if *mmu != "strict" && *mmu != "off" {
			return bsParams{}, fmt.Errorf("-iommu %q: want strict or off", *mmu)
		}
		if fs.NArg() != 0 {
			return bsParams{}, fmt.Errorf("unexpected arguments %q", fs.Args())
		}
		p := bsParams{frames: *frames, batch: batch, iommu: *mmu}
		if p.frames <= 0 {
			p.frames = full
			if *quick {
				p.frames = short
			}
		}
		return p, nil
	}
}

func runBuildSkb(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("buildskb", flag.ContinueOnError)
	params := rigFlags(fs, 262144, 32768)
	batch := fs.Int("batch", 64, "frames per timed poll (the RX ring holds 256)")
	profile := fs.String("cpuprofile", "", "write a CPU profile of the run to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	p, err := params(*batch)
	if err != nil {
		return err
	}
	if *profile != "" {
		stop, err := startProfile(*profile)
		if err != nil {
			return err
		}
		defer stop()
	}
	if p.batch <= 0 || p.batch > 200 {
		return fmt.Errorf("-batch %d: want 1..200", p.batch)
	}
	fmt.Fprintf(out, "buildskb: 64 B frames (60 B + FCS), one RX queue, igc driver + netstack endpoint, I225 model, VT-d %s\n", p.iommu)
	fmt.Fprintf(out, "%d frames per cell in polls of %d; the model fills the ring outside the timed section; median round\n\n", p.frames, p.batch)
	fmt.Fprintf(out, "%-11s %-10s %8s %7s %13s %9s\n", "to", "layout", "ns/pkt", "Mpps", "drv copies/1k", "reuse/1k")
	var mpps [3][2]float64
	for _, path := range []bsPath{toDispatcher, toSocket, toRelease} {
		res, err := measureRx(path, bsVariants, 60, p)
		if err != nil {
			return fmt.Errorf("%v: %w", path, err)
		}
		for i, r := range res {
			mpps[path][i] = 1e3 / r.ns
			fmt.Fprintf(out, "%-11s %-10s %8.0f %7.2f %13.0f %9.0f\n", path, r.variant, r.ns, 1e3/r.ns, r.copied, r.flips)
		}
	}
	fmt.Fprintf(out, "\nseed shape: to the dispatcher %.2f -> %.2f Mpps (construct -> build); to a UDP socket %.2f -> %.2f Mpps\n",
		mpps[toDispatcher][1], mpps[toDispatcher][0], mpps[toSocket][1], mpps[toSocket][0])
	fmt.Fprintf(out, "driver alone (no stack): build / construct %.2f\n", mpps[toRelease][0]/mpps[toRelease][1])
	if mpps[toDispatcher][1] <= 0 {
		return errors.New("construct measured nothing")
	}
	fmt.Fprintf(out, "ratio: %.2f\n", mpps[toDispatcher][0]/mpps[toDispatcher][1])
	return nil
}

type bsResult struct {
	variant  string
	ns       float64 // per packet
	copied   float64 // frames copied whole into a new head, per 1,000
	flips    float64 // buffers re-armed under an existing mapping, per 1,000 packets
	released float64 // pages given up to the stack, per 1,000 packets
}

// measureRx runs one rig per variant, round by round, so that every
// variant sees the same machine load.
func measureRx(path bsPath, variants []rxVariant, frameLen int, p bsParams) ([]bsResult, error) {
	rigs := make([]*bsRig, 0, len(variants))
	defer func() {
		for _, r := range rigs {
			r.close()
		}
	}()
	for _, v := range variants {
		r, err := newBsRig(path, v, frameLen, p.iommu)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", v.name, err)
		}
		rigs = append(rigs, r)
	}
	rounds := make([][]time.Duration, len(rigs))
	for warm := 0; warm < 8; warm++ { // every slot armed, pages flipping
		for _, r := range rigs {
			if _, err := r.round(p.batch); err != nil {
				return nil, err
			}
		}
	}
	start := make([]bsCounts, len(rigs))
	for i, r := range rigs {
		start[i] = r.counts()
	}
	for done := 0; done < p.frames; done += p.batch {
		for i, r := range rigs {
			el, err := r.round(p.batch)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", r.variant.name, err)
			}
			rounds[i] = append(rounds[i], el)
		}
	}
	out := make([]bsResult, len(rigs))
	for i, r := range rigs {
		end := r.counts()
		n := float64(len(rounds[i]) * p.batch)
		if got := end.delivered - start[i].delivered; got != uint64(n) {
			return out, fmt.Errorf("%s: %d of %.0f frames delivered", r.variant.name, got, n)
		}
		out[i] = bsResult{
			variant:  r.variant.name,
			ns:       float64(median(rounds[i]).Nanoseconds()) / float64(p.batch),
			copied:   float64(end.copied-start[i].copied) * 1000 / n,
			flips:    float64(end.flips-start[i].flips) * 1000 / n,
			released: float64(end.released-start[i].released) * 1000 / n,
		}
	}
	return out, nil
}

// rxVariant is a NIC a rig plugs in, set up one way: the simulated
// model and the ctl commands that choose the receive path measured.
type rxVariant struct {
	name  string
	model rxModel
	ctls  []string
	// check, if set, confirms the driver took the variant.
	check func(nic.NIC) error
}

// rxModel is the simulated device of a variant.
type rxModel uint8

const (
	modelI225  rxModel = iota // igc's
	model82576                // igb's
)

// plug puts the model on m's bus at a and cables it to the near end of w.
// It returns the model's counters, for an error that needs them.
func (mo rxModel) plug(m *sim.Machine, a pci.Addr, w *wire.Wire) (counters func() any, err error) {
	switch mo {
	case model82576:
		n, err := m82576.Plug(m, a, m82576.Options{})
		if err != nil {
			return nil, err
		}
		n.Attach(w.A())
		return func() any { return n.Counters() }, nil
	default:
		n, err := mi225.Plug(m, a, mi225.Options{})
		if err != nil {
			return nil, err
		}
		n.Attach(w.A())
		return func() any { return n.Counters() }, nil
	}
}

// igcLayout is the check that an igc rig's queue 0 has layout l.
func igcLayout(l igc.Layout) func(nic.NIC) error {
	return func(n nic.NIC) error {
		d, ok := n.(*igc.Device)
		if !ok {
			return fmt.Errorf("probe bound %T, not igc", n)
		}
		if got, _ := d.Layout(0); got != l {
			return fmt.Errorf("ring layout %v, want %v", got, l)
		}
		return nil
	}
}

var bsVariants = []rxVariant{
	{name: "build", model: modelI225, ctls: []string{"build auto", "rss off"}, check: igcLayout(igc.Build)},
	{name: "construct", model: modelI225, ctls: []string{"build off", "rss off"}, check: igcLayout(igc.Construct)},
}

// bsRig is one simulated machine with the NIC of a variant, its
// endpoint polled by hand, and the far end of its wire.
type bsRig struct {
	path     bsPath
	variant  rxVariant
	m        *sim.Machine
	counters func() any // the model's
	nic      nic.NIC
	ep       *netstack.Endpoint
	stack    *netstack.Stack
	sock     tcpip.Endpoint
	far      *wire.End
	sink     *sink
	frame    []byte
	q        int            // the queue the frames land on
	got      uint64         // datagrams read from the socket
	rounds   int            // polls timed, for the late reader
	released uint64         // packets the driver-alone path let go
	rxBatch  []nic.RxPacket // the driver-alone path's receive batch
	drain    bytes.Buffer
}

var bsAddr = netip.MustParsePrefix("192.0.2.1/24") // udpFrame's destination

func newBsRig(path bsPath, v rxVariant, frameLen int, mmu string) (*bsRig, error) {
	m := sim.NewMachine(sim.Config{VTd: vtd.QEMU()})
	if err := m.Err(); err != nil {
		return nil, err
	}
	w, err := wire.New(wire.Options{SpeedMbps: 2500, Clock: m.Clock})
	if err != nil {
		return nil, err
	}
	counters, err := v.model.plug(m, pci.Addr{Dev: 2}, w)
	if err != nil {
		return nil, err
	}
	var unit *iommu.Unit // nil: translation off
	if mmu == "strict" {
		if unit, err = iommu.New(m.VTdRegs(), m.Mem, iommu.Options{Clock: m.Clock}); err != nil {
			return nil, err
		}
	}
	res, err := probe.Bind(probe.Platform{
		Config: m.Bus,
		BAR:    func(f *pci.Function, bar int) (kernel.Regs, error) { return m.Bus.Regs(f.Addr, bar) },
		IOMMU:  unit,
		Memory: m.Mem,
		Clock:  m.Clock,
	})
	if err != nil {
		return nil, err
	}
	if err := res.Err(); err != nil {
		return nil, err
	}
	if len(res.NICs()) != 1 {
		return nil, fmt.Errorf("probe found %d NICs", len(res.NICs()))
	}
	d := res.NICs()[0]
	r := &bsRig{path: path, variant: v, m: m, counters: counters, nic: d, far: w.B(), sink: &sink{}, frame: udpFrame(d.MAC(), frameLen)}
	for _, c := range v.ctls {
		if err := d.Ctl(c); err != nil {
			d.Close()
			return nil, err
		}
	}
	if v.check != nil {
		if err := v.check(d); err != nil {
			d.Close()
			return nil, err
		}
	}
	if err := r.findQueue(); err != nil {
		d.Close()
		return nil, err
	}
	if path == toRelease {
		return r, nil
	}
	if path == toDispatcher {
		if r.ep, err = netstack.New(d, netstack.Options{Manual: true}); err != nil {
			d.Close()
			return nil, err
		}
		r.ep.Attach(r.sink)
		return r, nil
	}
	r.stack, err = netstack.NewStack(netstack.StackOptions{}, netstack.Interface{NIC: d, Addrs: []netip.Prefix{bsAddr}, Endpoint: netstack.Options{Manual: true}})
	if err != nil {
		d.Close()
		return nil, err
	}
	r.ep = r.stack.Endpoints[0]
	var wq waiter.Queue
	ep, terr := r.stack.NewEndpoint(udp.ProtocolNumber, ipv4.ProtocolNumber, &wq)
	if terr != nil {
		r.close()
		return nil, fmt.Errorf("udp endpoint: %s", terr)
	}
	r.sock = ep
	// Room for the late reader's frames: lateRounds polls of 1514-byte
	// frames and their packets' overhead.
	ep.SocketOptions().SetReceiveBufferSize(4<<20, true)
	if terr := ep.Bind(tcpip.FullAddress{Port: 9}); terr != nil {
		r.close()
		return nil, fmt.Errorf("bind udp port 9: %s", terr)
	}
	return r, nil
}

// findQueue sends one frame and finds the queue it landed on: the one
// every frame of the rig's single flow lands on, whatever RSS makes of it.
func (r *bsRig) findQueue() error {
	r.far.Send(r.frame)
	var p [1]nic.RxPacket
	for i, q := range r.nic.Queues() {
		if n, _ := q.Receive(p[:]); n == 1 {
			p[0].Data.Release()
			r.q = i
			return nil
		}
	}
	return fmt.Errorf("a frame sent landed on no queue (model counters %+v)", r.counters())
}

// round sends a batch from the far end (the model DMAs it into the ring),
// then times one poll of the batch and drains the socket.
func (r *bsRig) round(batch int) (time.Duration, error) {
	for i := 0; i < batch; i++ {
		r.far.Send(r.frame)
	}
	var (
		n   int
		err error
	)
	start := time.Now()
	if r.ep != nil {
		n, err = r.ep.Poll(r.q, batch)
	} else {
		n = r.receive(batch)
	}
	el := time.Since(start)
	if err != nil {
		return 0, err
	}
	if n != batch {
		return 0, fmt.Errorf("poll took %d of %d frames (model counters %+v)", n, batch, r.counters())
	}
	if r.rounds++; r.sock != nil && (r.path != toLateSocket || r.rounds%lateRounds == 0) {
		r.read()
		if r.got%uint64(batch) != 0 {
			return 0, fmt.Errorf("socket holds %d datagrams, not whole batches", r.got)
		}
	}
	return el, nil
}

// lateRounds is how many polls the late reader lets pass between reads:
// with the batches of 64 the benchmarks use, its socket holds the frames
// of a whole 256-descriptor ring when it reads.
const lateRounds = 8

// read takes every datagram the socket holds.
func (r *bsRig) read() {
	for {
		r.drain.Reset()
		if _, terr := r.sock.Read(&r.drain, tcpip.ReadOptions{}); terr != nil {
			return
		}
		r.got++
	}
}

type bsCounts struct{ delivered, copied, flips, released uint64 }

// receive is the driver-alone path's poll: one Receive of batch frames,
// each released. It returns the descriptors taken.
func (r *bsRig) receive(batch int) int {
	if len(r.rxBatch) < batch {
		r.rxBatch = make([]nic.RxPacket, batch)
	}
	pkts := r.rxBatch[:batch]
	n, taken := r.nic.Queues()[r.q].Receive(pkts)
	for i := range pkts[:n] {
		r.release(&pkts[i])
		pkts[i] = nic.RxPacket{}
	}
	return taken
}

// release is the driver-alone path's delivery: count, offer the buffer
// back as the endpoint does when the stack is done, and let go.
func (r *bsRig) release(p *nic.RxPacket) {
	r.released++
	if p.Recycle != nil {
		vl := p.Data.AsViewList()
		if v := vl.Front(); v != nil {
			p.Recycle(v)
		}
	}
	p.Data.Release()
}

// counts reads what reached the far side of the path and what the driver
// copied and flipped.
func (r *bsRig) counts() bsCounts {
	c := bsCounts{delivered: uint64(r.sink.frames)}
	switch r.path {
	case toSocket, toLateSocket:
		r.read()
		c.delivered = r.got
	case toRelease:
		c.delivered = r.released
	}
	for _, s := range r.nic.Stats() {
		switch s.Name {
		case "rx_page_flips", "rx_chunk_reuses", "rx_chunk_returns":
			c.flips += s.Value
		case "rx_copybreak": // frames copied whole into a new head
			c.copied += s.Value
		case "rx_page_released":
			c.released += s.Value
		}
	}
	return c
}

func (r *bsRig) close() {
	if r.sock != nil {
		r.sock.Close()
	}
	if r.stack != nil {
		r.stack.Close()
		return
	}
	if r.ep != nil {
		r.ep.Close()
		return
	}
	r.nic.Close()
}
