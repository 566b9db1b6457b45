package nic

import (
	"fmt"
	"time"

	"gvisor.dev/gvisor/pkg/buffer"
)

// Link is the state of the physical link.
type Link struct {
	Up         bool
	SpeedMbps  int // 10, 100, 1000, 2500
	FullDuplex bool
}

// String is the link as the console and status page show it: "up 1000
// Mb/s full duplex" or "down".
func (l Link) String() string {
	if !l.Up {
		return "down"
	}
	duplex := "full duplex"
	if !l.FullDuplex {
		duplex = "half duplex"
	}
	return fmt.Sprintf("up %d Mb/s %s", l.SpeedMbps, duplex)
}

// Features are the offloads the driver currently applies. They may change
// at run time (TSO goes off when a quirky part links at 100 Mb/s).
type Features struct {
	RxChecksum bool // the driver reports verified L4 checksums
	TxChecksum bool // the driver inserts TCP/UDP checksums (CsumStart/CsumOffset)
	TSOv4      bool // TCP segmentation of IPv4
	TSOv6      bool // TCP segmentation of IPv6
	MaxGSO     int  // largest TSO frame accepted, bytes
}

// GSOType is the segmentation a TX packet asks for.
type GSOType uint8

const (
	GSONone GSOType = iota
	GSOTCPv4
	GSOTCPv6
)

// TxPacket is one frame to send, starting at its Ethernet header. With
// NeedsCsum the driver (hardware or software) fills the 16-bit checksum at
// CsumStart+CsumOffset over [CsumStart, end) with the pseudo-header sum the
// stack already placed there. With GSO set the driver segments the frame
// into MSS-sized TCP segments; if the hardware cannot (TSO off) the driver
// does it in software, so no frame above the MTU ever reaches the wire.
type TxPacket struct {
	Data       buffer.Buffer
	NeedsCsum  bool
	CsumStart  uint16
	CsumOffset uint16
	GSO        GSOType
	MSS        uint16
	L3Len      uint16 // IP header length (with IPv6 extension headers)
	L4Len      uint16 // TCP header length, with options
}

// RxPacket is one received frame, starting at its Ethernet header. The
// receiver owns Data. Queue.Receive fills values of it into the caller's
// slice, so a frame costs no allocation on its way up.
type RxPacket struct {
	Data   buffer.Buffer
	CsumOK bool   // the device verified the L4 checksum
	Hash   uint32 // RSS hash when the device computed one
	// Recycle, if set, is offered the first view of the packet's data
	// once the receiver is done with the packet, before it releases it.
	// The driver may take a reference of its own (Clone) to re-arm the
	// buffer without a trip through gVisor's pool; receivers that do
	// not call it lose nothing.
	Recycle func(*buffer.View)
}

// Queue is one RX/TX queue pair. A queue is driven by one goroutine at a
// time for RX and one at a time for TX.
type Queue interface {
	// Receive takes up to len(pkts) completed descriptors from the RX
	// ring, fills pkts[:n] with the good frames among them, re-arms the
	// ring and returns n and the descriptors taken. The caller owns pkts
	// and the frames' Data; the driver keeps no reference to either and
	// calls nothing of the caller's. taken counts, besides the n frames,
	// the frames the driver dropped or a packet program kept (sent
	// back, redirected to a socket): a poll loop stays busy while
	// taken > 0 even when n is 0.
	Receive(pkts []RxPacket) (n, taken int)
	// Transmit queues frames and tells the device; it returns how many it
	// took. Fewer than len(pkts) means the ring is full: back-pressure, the
	// caller keeps the rest. Taken packets are owned by the driver.
	Transmit(pkts []*TxPacket) (int, error)
	// Reclaim frees the buffers of completed transmissions and returns how
	// many descriptors it freed.
	Reclaim() int
	// Wait sleeps until the queue may have work or timeout passes.
	Wait(timeout time.Duration) bool
}

// RxReadier is implemented by queues that can tell whether a received
// frame waits without touching the device (a done bit in the ring's
// memory). A spinning poll loop asks it instead of receiving: a receive
// reads registers, and under emulation every register access stops the
// vCPU in the device model, which holds up the emulation of the NIC
// itself.
type RxReadier interface {
	RxReady() bool
}

// Stat is one named counter.
type Stat struct {
	Name  string
	Value uint64
}

// NIC is a probed, running network controller.
type NIC interface {
	Name() string // "ether0"
	MAC() [6]byte
	MTU() int
	SetMTU(mtu int) error
	Link() Link
	Features() Features
	Queues() []Queue
	// Stats lists driver counters then device counters, stable order.
	Stats() []Stat
	// Ctl applies one text control command ("copybreak 2048", "tso off").
	// A bad command returns an error and changes nothing.
	Ctl(cmd string) error
	Close() error
}

// MulticastFilter is implemented by drivers whose receive filter can pass
// chosen multicast groups. A driver without it receives no multicast
// frames beyond what its hardware passes by default (IPv6 neighbour
// discovery then fails).
type MulticastFilter interface {
	// AddMulticast passes frames sent to the group address mac. Adds are
	// counted: a group added twice needs two removes.
	AddMulticast(mac [6]byte) error
	// RemoveMulticast undoes one AddMulticast of mac.
	RemoveMulticast(mac [6]byte) error
	// SetAllMulticast passes every multicast frame when on, whatever the
	// groups.
	SetAllMulticast(on bool) error
}

// DeviceStater is implemented by drivers that can list the device's own
// statistics registers apart from their driver counters (the ifstats
// file).
type DeviceStater interface {
	DeviceStats() []Stat
}

// TSOReasoner is implemented by drivers that can say why TSO is in its
// current state: "pch_spt quirk", "ctl tso off".
type TSOReasoner interface {
	TSOReason() string
}

// Tuner is implemented by drivers that measure, on the machine they run
// on, what one of their defaults depends on (e1000e: the copybreak behind
// an IOMMU). A measurement holds the CPU for milliseconds, so the driver
// starts with a safe default and the system calls Tune once its boot is
// over. Tune leaves alone a setting a ctl command has made.
type Tuner interface {
	Tune() error
}
