package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/probe"
	"github.com/ether9/ether9/internal/udpframe"
	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/iommu"
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/m82574"
	"github.com/ether9/ether9/kernel/sim/vtd"
	"github.com/ether9/ether9/kernel/sim/wire"
	"github.com/ether9/ether9/netstack"
	"github.com/ether9/ether9/pci"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// The copybreak benchmark reproduces the e1000e copybreak seed's table:
// ns per RX buffer for the legacy "unmap always" mode against "sync, no
// unmap", under each IOMMU mode, for copybreak 0, 256 and 2048, at the
// smallest and largest frames.
//
// What is timed: Endpoint.Poll, that is the driver's RX clean (descriptor
// read, sync or unmap, copy or hand-off, refill with map, tail write) and
// the endpoint's delivery (packet buffer around the frame, Ethernet
// header, hand-over to a stack dispatcher that drops it, release). What is
// not: the model's work. Each round the wire's far end puts a batch of
// frames into the ring with the clock stopped (the model DMAs them through
// the VT-d model then), and one timed Poll cleans the batch.

var (
	cbModes  = []string{"unmap", "sync"}
	cbIOMMUs = []string{"off", "strict", "deferred"}
	cbValues = []int{0, 256, 2048}
	cbSizes  = []int{60, 1514} // "64 B" on the wire with its FCS, and a full frame
)

func modeName(m string) string {
	if m == "unmap" {
		return "unmap-always"
	}
	return "sync-no-unmap"
}

type cbCell struct {
	mode, mmu string
	cb, size  int
}

type cbResult struct {
	cbCell
	frames              int
	ns                  float64 // per RX buffer, in the median round
	chosen              int     // the copybreak the driver had
	maps, unmaps, inval float64 // per 1,000 frames
}

type cbParams struct {
	frames, batch, deferBatch int
	invCost                   time.Duration
}

func runCopybreak(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("copybreak", flag.ContinueOnError)
	quick := fs.Bool("quick", false, "a short run: 16,384 frames per cell instead of 131,072")
	frames := fs.Int("frames", 0, "frames per cell (overrides -quick)")
	batch := fs.Int("batch", 128, "frames per timed poll (the RX ring holds 256)")
	deferBatch := fs.Int("deferred-batch", 64, "unmaps per IOTLB invalidation in deferred mode")
	invCost := fs.Duration("invcost", time.Microsecond, "time one VT-d invalidation takes in the model (0: none)")
	profile := fs.String("cpuprofile", "", "write a CPU profile of the run to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *profile != "" {
		stop, err := startProfile(*profile)
		if err != nil {
			return err
		}
		defer stop()
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	p := cbParams{frames: *frames, batch: *batch, deferBatch: *deferBatch, invCost: *invCost}
	if p.frames <= 0 {
		p.frames = 131072
		if *quick {
			p.frames = 16384
		}
	}
	if p.batch <= 0 || p.batch > 200 {
		return fmt.Errorf("-batch %d: want 1..200", p.batch)
	}
	if p.invCost < 0 {
		return fmt.Errorf("-invcost %v: negative", p.invCost)
	}

	fmt.Fprintf(out, "copybreak: ns per RX buffer, e1000e driver + netstack endpoint, 82574L model\n")
	fmt.Fprintf(out, "VT-d invalidation cost %v (busy wait in the model); deferred mode invalidates every %d unmaps\n", p.invCost, p.deferBatch)
	fmt.Fprintf(out, "%d frames per cell in timed polls of %d, the median poll reported; the model fills the ring between polls, untimed\n\n", p.frames, p.batch)
	fmt.Fprintf(out, "%-14s %-9s %5s %5s %9s %7s %8s %9s %8s\n", "mode", "iommu", "cb", "size", "ns/buf", "Mpps", "maps/1k", "unmaps/1k", "inv/1k")

	// A discarded cell first: the heap, the caches and the CPU's clock
	// settle before the first reported one.
	warm := p
	warm.frames = min(p.frames, 16384)
	if _, err := measureCell(cbCell{"sync", "strict", 256, 1514}, warm); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	var results []cbResult
	for _, mode := range cbModes {
		for _, mmu := range cbIOMMUs {
			for _, cb := range cbValues {
				for _, size := range cbSizes {
					r, err := measureCell(cbCell{mode, mmu, cb, size}, p)
					if err != nil {
						return fmt.Errorf("%s iommu %s cb %d size %d: %w", modeName(mode), mmu, cb, size, err)
					}
					results = append(results, r)
					fmt.Fprintf(out, "%-14s %-9s %5d %5d %9.0f %7.2f %8.0f %9.0f %8.0f\n",
						modeName(mode), mmu, cb, size, r.ns, 1e3/r.ns, r.maps, r.unmaps, r.inval)
				}
			}
		}
	}
	return printSeedShape(out, results)
}

// printSeedShape prints the seed's sentence form for full frames and the
// ratio line.
func printSeedShape(out io.Writer, rs []cbResult) error {
	find := func(mode, mmu string, cb, size int) (cbResult, bool) {
		for _, r := range rs {
			if r.mode == mode && r.mmu == mmu && r.cb == cb && r.size == size {
				return r, true
			}
		}
		return cbResult{}, false
	}
	fmt.Fprintf(out, "\nseed shape, ns per RX buffer (1514 B):\n")
	for _, mode := range cbModes {
		fmt.Fprintf(out, "  %-14s", modeName(mode)+":")
		for _, mmu := range cbIOMMUs {
			a, ok1 := find(mode, mmu, 0, 1514)
			b, ok2 := find(mode, mmu, 2048, 1514)
			if ok1 && ok2 {
				fmt.Fprintf(out, " IOMMU %s: %.0f (cb 0), %.0f (cb 2048);", mmu, a.ns, b.ns)
			}
		}
		fmt.Fprintln(out)
	}
	if r, ok := find("sync", "off", 256, 60); ok {
		fmt.Fprintf(out, "IOMMU off, 64 B, cb 256 (the default), sync-no-unmap: %.0f ns per packet\n", r.ns)
	}
	sync, ok1 := find("sync", "strict", 2048, 1514)
	unmap, ok2 := find("unmap", "strict", 2048, 1514)
	if !ok1 || !ok2 || unmap.ns == 0 {
		return errors.New("ratio cells missing")
	}
	fmt.Fprintf(out, "ratio: %.2f\n", sync.ns/unmap.ns)
	return nil
}

// measureCell builds a fresh machine for one cell and times it.
func measureCell(c cbCell, p cbParams) (cbResult, error) {
	r, err := newRxRig(c, p)
	if err != nil {
		return cbResult{}, err
	}
	defer r.close()
	frame := udpFrame(r.nic.MAC(), c.size)

	round := func() (time.Duration, error) {
		for i := 0; i < p.batch; i++ {
			r.far.Send(frame)
		}
		start := time.Now()
		n, err := r.ep.Poll(0, p.batch)
		el := time.Since(start)
		if err != nil {
			return 0, err
		}
		if n != p.batch {
			return 0, fmt.Errorf("poll delivered %d of %d frames (model counters %+v)", n, p.batch, r.model.Counters())
		}
		return el, nil
	}
	// Two untimed rounds bring the ring to its steady state (in sync mode
	// every slot then holds a mapped buffer).
	for i := 0; i < 2; i++ {
		if _, err := round(); err != nil {
			return cbResult{}, err
		}
	}
	maps0, unmaps0, inv0 := r.counts()
	sink0 := r.sink.frames
	var rounds []time.Duration
	frames := 0
	for frames < p.frames {
		el, err := round()
		if err != nil {
			return cbResult{}, err
		}
		rounds = append(rounds, el)
		frames += p.batch
	}
	if got := r.sink.frames - sink0; got != frames {
		return cbResult{}, fmt.Errorf("stack got %d of %d frames", got, frames)
	}
	maps, unmaps, inv := r.counts()
	chosen := 0
	for _, st := range r.nic.Stats() {
		if st.Name == "copybreak" {
			chosen = int(st.Value)
		}
	}
	per := func(v uint64) float64 { return float64(v) * 1000 / float64(frames) }
	return cbResult{
		cbCell: c,
		frames: frames,
		ns:     float64(median(rounds).Nanoseconds()) / float64(p.batch),
		maps:   per(maps - maps0),
		unmaps: per(unmaps - unmaps0),
		inval:  per(inv - inv0),
		chosen: chosen,
	}, nil
}

// median is the middle of ds: on a shared machine a round that lost the
// CPU or met a collection says nothing about the path.
func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// rxRig is one simulated machine with the NIC under test, its endpoint
// driven by hand, and the far end of its wire.
type rxRig struct {
	m     *sim.Machine
	model *m82574.NIC
	unit  *iommu.Unit
	nic   nic.NIC
	ep    *netstack.Endpoint
	far   *wire.End
	sink  *sink
}

func newRxRig(c cbCell, p cbParams) (*rxRig, error) {
	vc := vtd.QEMU()
	vc.InvalidationCost = p.invCost
	if p.invCost == 0 {
		vc.InvalidationCost = -1 // the model's "none"
	}
	m := sim.NewMachine(sim.Config{VTd: vc})
	if err := m.Err(); err != nil {
		return nil, err
	}
	at := pci.Addr{Dev: 2}
	model, err := m82574.Plug(m, at, m82574.Options{})
	if err != nil {
		return nil, err
	}
	w, err := wire.New(wire.Options{Clock: m.Clock})
	if err != nil {
		return nil, err
	}
	model.Attach(w.A())
	r := &rxRig{m: m, model: model, far: w.B(), sink: &sink{}}
	if c.mmu != "off" {
		if r.unit, err = iommu.New(m.VTdRegs(), m.Mem, iommu.Options{Clock: m.Clock}); err != nil {
			return nil, err
		}
		if c.mmu == "deferred" {
			if err := r.unit.SetMode(iommu.Deferred, p.deferBatch); err != nil {
				return nil, err
			}
		}
	}
	res, err := probe.Bind(probe.Platform{
		Config: m.Bus,
		BAR:    func(f *pci.Function, bar int) (kernel.Regs, error) { return m.Bus.Regs(f.Addr, bar) },
		IOMMU:  r.unit,
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
	r.nic = res.NICs()[0]
	cb := fmt.Sprintf("copybreak %d", c.cb)
	if c.cb == cbAuto {
		cb = "copybreak auto"
	}
	for _, cmd := range []string{"copybreak-mode " + c.mode, cb} {
		if err := r.nic.Ctl(cmd); err != nil {
			r.nic.Close()
			return nil, err
		}
	}
	if r.ep, err = netstack.New(r.nic, netstack.Options{Manual: true}); err != nil {
		r.nic.Close()
		return nil, err
	}
	r.ep.Attach(r.sink)
	return r, nil
}

// counts returns the driver's DMA API calls for RX buffers and the
// IOTLB invalidations issued.
func (r *rxRig) counts() (maps, unmaps, inv uint64) {
	for _, s := range r.nic.Stats() {
		switch s.Name {
		case "rx_maps":
			maps = s.Value
		case "rx_unmaps":
			unmaps = s.Value
		}
	}
	if r.unit != nil {
		inv = r.unit.Stats().Invalidations()
	}
	return
}

func (r *rxRig) close() {
	r.ep.Close() // closes the NIC too
}

// sink is a stack that drops what it is given, counting it.
type sink struct{ frames int }

func (s *sink) DeliverNetworkPacket(tcpip.NetworkProtocolNumber, *stack.PacketBuffer) { s.frames++ }
func (s *sink) DeliverLinkPacket(tcpip.NetworkProtocolNumber, *stack.PacketBuffer)    {}

// udpFrame is a size-byte IPv4 UDP frame to mac with valid checksums, so
// the device reports them verified as it would for real traffic.
func udpFrame(mac [6]byte, size int) []byte {
	flow := udpframe.Flow{
		SrcMAC: [6]byte{0x02, 0, 0, 0, 0, 9}, DstMAC: mac,
		Src: [4]byte{192, 0, 2, 9}, Dst: [4]byte{192, 0, 2, 1},
		SrcPort: 9, DstPort: 9,
	}
	f := flow.Put(make([]byte, size), size)
	for i := udpframe.HeaderLen; i < size; i++ {
		f[i] = byte(i - 34) // the payload counts from the UDP header's start
	}
	udpframe.SetChecksum(f)
	return f
}
