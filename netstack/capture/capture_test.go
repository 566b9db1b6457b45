package capture_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
	"gvisor.dev/gvisor/pkg/buffer"

	"github.com/ether9/ether9/netstack/capture"
)

// frame is an n-byte frame whose first bytes say i.
func frame(i, n int) []byte {
	b := make([]byte, n)
	copy(b, fmt.Sprintf("frame %06d", i))
	return b
}

func add(c *capture.Capture, b []byte) {
	buf := buffer.MakeWithData(b)
	c.Add(&buf)
	buf.Release()
}

// readAll parses a stream until it ends, failing on anything pcapgo
// refuses; it returns the frames' data and their lengths on the wire.
func readAll(t *testing.T, r io.Reader) (frames [][]byte, orig []int) {
	t.Helper()
	pr, err := pcapgo.NewReader(r)
	if err != nil {
		t.Fatalf("pcap header: %v", err)
	}
	if pr.LinkType() != layers.LinkTypeEthernet {
		t.Fatalf("link type %v, want Ethernet", pr.LinkType())
	}
	for {
		data, ci, err := pr.ReadPacketData()
		if errors.Is(err, io.EOF) {
			return frames, orig
		}
		if err != nil {
			t.Fatalf("record %d: %v", len(frames), err)
		}
		if ci.CaptureLength != len(data) || ci.Length < ci.CaptureLength {
			t.Fatalf("record %d: kept %d of %d, data %d", len(frames), ci.CaptureLength, ci.Length, len(data))
		}
		if time.Since(ci.Timestamp) > time.Minute || time.Until(ci.Timestamp) > time.Minute {
			t.Fatalf("record %d: timestamp %v is not now", len(frames), ci.Timestamp)
		}
		frames = append(frames, data)
		orig = append(orig, ci.Length)
	}
}

func TestStreamParsesAndEndsAtStop(t *testing.T) {
	c := capture.New()
	if _, err := c.Open(netip.AddrPort{}, netip.AddrPort{}); !errors.Is(err, capture.ErrOff) {
		t.Fatalf("open while off: %v, want ErrOff", err)
	}
	c.Start()
	add(c, frame(0, 100)) // before the reader: not in its stream
	r, err := c.Open(netip.AddrPort{}, netip.AddrPort{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	add(c, frame(1, 60))
	add(c, frame(2, 1514))
	add(c, frame(3, 9000)) // cut at the snaplen
	c.Stop()
	add(c, frame(4, 60)) // after stop: not kept
	frames, orig := readAll(t, r)
	if len(frames) != 3 {
		t.Fatalf("%d frames, want 3", len(frames))
	}
	for i, want := range []struct{ kept, orig int }{{60, 60}, {1514, 1514}, {capture.DefaultSnaplen, 9000}} {
		if len(frames[i]) != want.kept || orig[i] != want.orig {
			t.Errorf("frame %d: kept %d of %d, want %d of %d", i, len(frames[i]), orig[i], want.kept, want.orig)
		}
		if !bytes.HasPrefix(frames[i], []byte(fmt.Sprintf("frame %06d", i+1))) {
			t.Errorf("frame %d starts %q", i, frames[i][:12])
		}
	}
	if f, d, n := c.Stats(); f != 4 || d != 0 || n != 1 {
		t.Errorf("stats frames %d dropped %d readers %d, want 4 0 1", f, d, n)
	}
}

// A reader that does not keep up loses the oldest frames, counted, and
// the writer never waits for it; the frames it does get are the newest,
// in order.
func TestSlowReaderDropsCounted(t *testing.T) {
	c := capture.New()
	if err := c.SetSnaplen(capture.MaxSnaplen); err != nil {
		t.Fatal(err)
	}
	c.Start()
	r, err := c.Open(netip.AddrPort{}, netip.AddrPort{})
	if err != nil {
		t.Fatal(err)
	}
	const sent = 1000
	for i := range sent {
		add(c, frame(i, 64))
	}
	slots := max(capture.MinSlots, capture.RingBytes/capture.MaxSnaplen)
	// Counted as they happen, before the reader reads again: a reader
	// stuck on a full connection must not hide its losses.
	if _, d, _ := c.Stats(); d != sent-uint64(slots) {
		t.Fatalf("capture dropped %d before the reader read, want %d", d, sent-slots)
	}
	c.Stop()
	frames, _ := readAll(t, r)
	if len(frames) != slots {
		t.Fatalf("read %d frames, want the ring's %d", len(frames), slots)
	}
	if d := r.Dropped(); d != sent-uint64(slots) {
		t.Fatalf("reader dropped %d, want %d", d, sent-slots)
	}
	if _, d, _ := c.Stats(); d != sent-uint64(slots) {
		t.Fatalf("capture dropped %d, want %d", d, sent-slots)
	}
	for i, f := range frames {
		if want := fmt.Sprintf("frame %06d", sent-slots+i); !bytes.HasPrefix(f, []byte(want)) {
			t.Fatalf("frame %d is %q, want %q", i, f[:12], want)
		}
	}
}

// Several readers each see every frame from when they opened; one that
// goes away, even while it waits in Read, leaves the others and the
// writers unharmed.
func TestReadersConcurrent(t *testing.T) {
	c := capture.New()
	c.Start()
	quitter, err := c.Open(netip.AddrPort{}, netip.AddrPort{})
	if err != nil {
		t.Fatal(err)
	}
	waiting := make(chan error, 1)
	go func() {
		io.ReadFull(quitter, make([]byte, 24)) // the file header
		_, err := quitter.Read(make([]byte, 1))
		waiting <- err
	}()
	const readers, writers, each = 3, 4, 100
	var rs []*capture.Reader
	for range readers {
		r, err := c.Open(netip.AddrPort{}, netip.AddrPort{})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		rs = append(rs, r)
	}
	results := make(chan int, readers)
	for _, r := range rs {
		go func() {
			pr, err := pcapgo.NewReader(r)
			if err != nil {
				results <- -1
				return
			}
			n := 0
			for {
				if _, _, err := pr.ReadPacketData(); err != nil {
					results <- n
					return
				}
				n++
			}
		}()
	}
	time.Sleep(10 * time.Millisecond)
	quitter.Close()
	select {
	case err := <-waiting:
		if !errors.Is(err, capture.ErrClosed) {
			t.Fatalf("read waiting at close: %v, want ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a read waiting in Read did not return at Close")
	}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				add(c, frame(w*each+i, 80))
				if i%16 == 0 {
					time.Sleep(time.Millisecond) // let readers keep up: this test is not about drops
				}
			}
		}()
	}
	wg.Wait()
	c.Stop()
	for range readers {
		select {
		case n := <-results:
			_, dropped, _ := c.Stats()
			if uint64(n)+dropped < writers*each || n > writers*each {
				t.Errorf("a reader got %d frames (ring dropped %d in all), want %d", n, dropped, writers*each)
			}
		case <-time.After(10 * time.Second):
			f, d, n := c.Stats()
			t.Fatalf("a reader did not end after Stop: frames %d dropped %d readers %d", f, d, n)
		}
	}
}

func TestSnaplen(t *testing.T) {
	c := capture.New()
	for _, n := range []int{0, capture.MinSnaplen - 1, capture.MaxSnaplen + 1, -5} {
		if err := c.SetSnaplen(n); err == nil {
			t.Errorf("snaplen %d accepted", n)
		}
	}
	if c.Snaplen() != capture.DefaultSnaplen {
		t.Fatalf("refused snaplens changed it to %d", c.Snaplen())
	}
	if err := c.SetSnaplen(128); err != nil {
		t.Fatal(err)
	}
	c.Start()
	if err := c.SetSnaplen(256); err == nil {
		t.Fatal("snaplen changed while on")
	}
	r, _ := c.Open(netip.AddrPort{}, netip.AddrPort{})
	add(c, frame(0, 1000))
	c.Stop()
	frames, orig := readAll(t, r)
	if len(frames) != 1 || len(frames[0]) != 128 || orig[0] != 1000 {
		t.Fatalf("frames %d, kept %v of %v: want 1, 128 of 1000", len(frames), len(frames[0]), orig)
	}
	// Off and on again: a reader of the old ring ends, a new one reads.
	c.Start()
	old := r
	if _, err := old.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("old reader after a new start: %v, want EOF", err)
	}
}

// With capture off, the data path allocates nothing; on, neither.
func TestAddAllocatesNothing(t *testing.T) {
	c := capture.New()
	buf := buffer.MakeWithData(frame(0, 1514))
	defer buf.Release()
	if n := testing.AllocsPerRun(100, func() {
		if c.On() {
			c.Add(&buf)
		}
	}); n != 0 {
		t.Fatalf("off: %v allocations per frame", n)
	}
	c.Start()
	r, _ := c.Open(netip.AddrPort{}, netip.AddrPort{})
	defer r.Close()
	if n := testing.AllocsPerRun(100, func() { c.Add(&buf) }); n != 0 {
		t.Fatalf("on: %v allocations per frame", n)
	}
}

// tcpFrame is an Ethernet II, IPv4, TCP frame from src to dst.
func tcpFrame(src, dst netip.AddrPort, payload string) []byte {
	f := make([]byte, 14+20+20+len(payload))
	f[12], f[13] = 0x08, 0x00
	ip := f[14:]
	ip[0], ip[9] = 0x45, 6
	copy(ip[12:], src.Addr().AsSlice())
	copy(ip[16:], dst.Addr().AsSlice())
	tcp := ip[20:]
	tcp[0], tcp[1] = byte(src.Port()>>8), byte(src.Port())
	tcp[2], tcp[3] = byte(dst.Port()>>8), byte(dst.Port())
	copy(tcp[20:], payload)
	return f
}

// The frames of the connection a stream goes out on are in no reader's
// stream (two readers would otherwise feed each other without end);
// the same hosts' other connections are.
func TestOwnConnectionLeftOut(t *testing.T) {
	guest := netip.MustParseAddrPort("10.0.2.15:80")
	host := netip.MustParseAddrPort("10.0.2.2:40000")
	other := netip.MustParseAddrPort("10.0.2.2:40001")
	c := capture.New()
	c.Start()
	r, err := c.Open(guest, host)
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := c.Open(netip.AddrPort{}, netip.AddrPort{})
	defer plain.Close()
	add(c, tcpFrame(guest, host, "own tx"))
	add(c, tcpFrame(host, guest, "own rx"))
	add(c, tcpFrame(other, guest, "other"))
	c.Stop()
	for _, rd := range []*capture.Reader{r, plain} {
		frames, _ := readAll(t, rd)
		if len(frames) != 1 || !bytes.HasSuffix(frames[0], []byte("other")) {
			t.Fatalf("%d frames, want only the other connection's", len(frames))
		}
	}
}

// A frame of a reader's own stream, left out while another reader is a
// whole ring behind, must not touch the oldest slot, which that reader
// reads next.
func TestOwnFrameKeepsOldestSlot(t *testing.T) {
	guest := netip.MustParseAddrPort("10.0.2.15:80")
	host := netip.MustParseAddrPort("10.0.2.2:40000")
	c := capture.New()
	c.Start()
	own, _ := c.Open(guest, host)
	defer own.Close()
	lagging, _ := c.Open(netip.AddrPort{}, netip.AddrPort{})
	slots := capture.RingBytes / capture.DefaultSnaplen
	for i := range slots {
		add(c, frame(i, 60))
	}
	add(c, tcpFrame(guest, host, strings.Repeat("own stream ", 100)))
	c.Stop()
	frames, orig := readAll(t, lagging)
	if len(frames) != slots {
		t.Fatalf("%d frames, want %d", len(frames), slots)
	}
	for i, f := range frames {
		if len(f) != 60 || orig[i] != 60 || !bytes.HasPrefix(f, []byte(fmt.Sprintf("frame %06d", i))) {
			t.Fatalf("frame %d: %d of %d bytes, %q", i, len(f), orig[i], f[:12])
		}
	}
}
