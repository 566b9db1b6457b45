// Package nic is the common interface between NIC drivers and their users
// (the netstack link endpoint, zero-copy queue applications, tools). It
// knows nothing of registers and nothing of the TCP/IP stack.
//
// # Receive
//
// Queue.Receive fills the caller's batch: the caller owns the loop, the
// slice and the frames, and no driver holds a function of the caller's.
// A hop below is a function a received frame passes through, from the
// one that reads its descriptor to gVisor's dispatcher, a return
// included; helpers that hand back to the same function (a descriptor
// decoder, the ring's buffer code, ring.FaultGuard) are named beside it.
// All three drivers clean their rings with the one loop, ring.CleanRx
// (drivers/ring/clean.go), over the status dword the extended and the
// advanced write-backs share; each decodes the rest of a good frame's
// descriptor itself. netstack's side is the same for every driver.
//
// e1000e (6 hops):
//
//  1. ring.CleanRx (drivers/ring/clean.go) reads the descriptor's DD,
//     EOP and error bits
//  2. the frame closure of e1000e queue.Receive (drivers/e1000e/rx.go)
//     decodes the extended write-back (decodeRx, drivers/e1000e/desc.go)
//     and takes the buffer with ring.RxRing.Receive (drivers/ring/rx.go)
//     into pkts[n]
//  3. e1000e queue.Receive (drivers/e1000e/rx.go), on return: judges
//     the batch by the fault count with ring.FaultGuard.Judge
//     (drivers/ring/fault.go), then refills
//  4. netstack rxPath.receive (netstack/rx.go), the poll loop's step
//  5. rxPath.toStack (netstack/rx.go): packet buffer, link header,
//     checksums
//  6. gVisor's NetworkDispatcher.DeliverNetworkPacket, or gro.Enqueue,
//     whose engine the poll flushes into the dispatcher at its end
//
// igb (6 hops):
//
//  1. ring.CleanRx (drivers/ring/clean.go) reads the descriptor's DD,
//     EOP and error bits
//  2. igb queue.frame (drivers/igb/rx.go), through the loop's closure,
//     which decodes the advanced write-back (adv.DecodeRx,
//     drivers/adv/desc.go): the packet program's verdict,
//     ring.PageRxRing.Receive (drivers/ring/page.go), which constructs
//     a long frame (ring.Construct, drivers/ring/header.go), pkts[n]
//  3. adv.Pair.Receive (drivers/adv/pair.go), the loop igb and igc
//     share, on return: refills, then ring.FaultGuard.Check over the
//     batch
//  4. to 6. as e1000e's 4 to 6
//
// igc (6 hops): as igb's, with igc queue.frame (drivers/igc/rx.go)
// building around or constructing from the buffer (drivers/igc/rxbuf.go,
// rxchunk.go). A bound socket's zero-copy frames (igb, igc) go through
// adv.ZeroCopy.Frame (drivers/adv/rxzc.go) in place of queue.frame, the
// stack getting a copy.
//
// A debug inject-unmapped-rx (ring.RxInject, drivers/ring/hole.go) is
// looked at once per poll, at the refill, never per frame.
//
// The only call from the stack's side into a driver after delivery is the
// release hook RxPacket.Recycle (igc's built buffers): gVisor calls it,
// through netstack's offer, when the packet's last reference goes, so the
// chunk is re-armed without a trip through gVisor's pool.
//
// # Optional capabilities
//
// Declared beside the interface they extend; each driver asserts at
// compile time the ones it has (igb's and igc's MulticastFilter is
// adv.Port's, asserted there and on each Device).
//
//	capability        extends   e1000e  igb  igc
//	MulticastFilter   NIC       yes     yes  yes
//	DeviceStater      NIC       yes     -    -
//	TSOReasoner       NIC       yes     -    -
//	RxReadier         Queue     yes     -    -
//
// Of a DMA view (kernel.DMA), for the receive fault rule and debug
// inject-unmapped-rx, which all three drivers have: ring.FaultCounter and
// ring.Holer, both implemented by the IOMMU's domain (kernel/iommu,
// asserted in drivers/probe, which hands domains to the drivers) and
// ring.FaultCounter by the test DMA (drivers/internal/fakedev, asserted
// in ring's tests).
package nic
