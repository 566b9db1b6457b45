package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

func init() {
	commands["pagerx"] = command{"ns per 1514 B frame on an igb queue: constructed, built, copied whole; to the dispatcher, a UDP socket, a late reader", runPageRx}
}

// The pagerx benchmark measures what igb's half-page receive ring
// (ring.PageRxRing) costs per full-sized frame, by how a frame goes up:
//
//   - construct, the default: the headers copied into a head of the
//     packet's own, the rest of the half attached as a view of the page;
//   - build: the half alone as the packet's view. gVisor's views are
//     copy-on-write, so the stack's first header pull-up (the Ethernet
//     header, in the endpoint) copies the whole shared 4 KiB page;
//   - copy: copybreak 2048, every frame copied whole into a view of its
//     own and its half re-armed.
//
// What is timed is what buildskb times: Endpoint.Poll, the driver's clean
// and refill and the delivery through the stack, over the 82576 model
// behind the VT-d model; the model's DMA and the socket's reader are
// outside the clock. The late reader reads its socket every lateRounds
// polls, so the stack holds a ring's worth of frames: a constructed or
// constructed frame then holds its page, the slot cannot flip to the
// other half and gives the page up ("released"), and the ring allocates
// and maps a new one. That is the price of not copying, and Linux's igb
// pays it too. A built frame holds no page: its copy-on-write copy did.
// So after a give-up the ring copies for a while (ring.PageRxRing's
// holdoff), and the late reader's construct row shows a few give-ups a
// thousand frames and the copies after them.
var pageRxVariants = []rxVariant{
	{name: "construct", model: model82576, ctls: []string{"copybreak 256", "build off"}},
	{name: "build", model: model82576, ctls: []string{"copybreak 256", "build on"}},
	{name: "copy", model: model82576, ctls: []string{"copybreak 2048", "build off"}},
}

func runPageRx(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("pagerx", flag.ContinueOnError)
	params := rigFlags(fs, 131072, 16384)
	size := fs.Int("size", 1514, "frame length in bytes, FCS not counted (257..2047)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	p, err := params(64)
	if err != nil {
		return err
	}
	if *size < 257 || *size > 2047 {
		return fmt.Errorf("-size %d: want 257..2047 (longer than a head, within a half page)", *size)
	}
	fmt.Fprintf(out, "pagerx: %d B UDP frames, one RX queue, igb driver + netstack endpoint, 82576 model, VT-d %s\n", *size, p.iommu)
	fmt.Fprintf(out, "%d frames per cell in polls of %d; the model fills the ring outside the timed section; median round\n\n", p.frames, p.batch)
	fmt.Fprintf(out, "%-11s %-10s %8s %7s %13s %9s %12s\n", "to", "variant", "ns/pkt", "Mpps", "drv copies/1k", "flips/1k", "released/1k")
	ns := map[bsPath]map[string]float64{}
	for _, path := range []bsPath{toDispatcher, toSocket, toLateSocket, toRelease} {
		res, err := measureRx(path, pageRxVariants, *size, p)
		if err != nil {
			return fmt.Errorf("%v: %w", path, err)
		}
		ns[path] = map[string]float64{}
		for _, r := range res {
			ns[path][r.variant] = r.ns
			fmt.Fprintf(out, "%-11s %-10s %8.0f %7.2f %13.0f %9.0f %12.0f\n", path, r.variant, r.ns, 1e3/r.ns, r.copied, r.flips, r.released)
		}
	}
	if ns[toDispatcher]["construct"] <= 0 {
		return errors.New("construct measured nothing")
	}
	fmt.Fprintln(out, "\nns per frame against construct's (above 1: construct is faster)")
	for _, path := range []bsPath{toDispatcher, toSocket, toLateSocket, toRelease} {
		c := ns[path]["construct"]
		fmt.Fprintf(out, "  %-11s build %.2f  copy %.2f\n", path, ns[path]["build"]/c, ns[path]["copy"]/c)
	}
	// The headline: construct's rate to a socket over build's, which
	// was igb's only way before construct.
	fmt.Fprintf(out, "ratio: %.2f\n", ns[toSocket]["build"]/ns[toSocket]["construct"])
	return nil
}
