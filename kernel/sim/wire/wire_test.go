package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"sync"
	"testing"
	"time"
)

// stepClock advances by a fixed step on every Now: distinct, known stamps.
type stepClock struct {
	mu  sync.Mutex
	now time.Duration
}

func (c *stepClock) Now() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now += 1500 * time.Millisecond
	return c.now
}
func (c *stepClock) Sleep(d time.Duration) {}

func frame(n int, tag byte) []byte {
	f := make([]byte, n)
	for i := range f {
		f[i] = tag + byte(i)
	}
	return f
}

func TestDeliversBothWays(t *testing.T) {
	w, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	var gotA, gotB [][]byte
	w.A().Receive(func(f []byte) { gotA = append(gotA, bytes.Clone(f)) })
	w.B().Receive(func(f []byte) { gotB = append(gotB, bytes.Clone(f)) })

	w.A().Send(frame(60, 1))
	w.A().Send(frame(1514, 2))
	w.B().Send(frame(100, 3))

	if len(gotB) != 2 || !bytes.Equal(gotB[0], frame(60, 1)) || !bytes.Equal(gotB[1], frame(1514, 2)) {
		t.Fatalf("B received %d frames, want the two A sent", len(gotB))
	}
	if len(gotA) != 1 || !bytes.Equal(gotA[0], frame(100, 3)) {
		t.Fatalf("A received %d frames, want the one B sent", len(gotA))
	}
	ab, ba := w.Stats()
	if ab.Frames != 2 || ab.Bytes != 1574 || ab.MaxLen != 1514 || ba.Frames != 1 || ba.Bytes != 100 {
		t.Fatalf("stats a->b %+v b->a %+v", ab, ba)
	}
}

func TestLinkDownDropsAndNotifies(t *testing.T) {
	w, err := New(Options{SpeedMbps: 100})
	if err != nil {
		t.Fatal(err)
	}
	type state struct {
		up    bool
		speed int
	}
	var seen []state
	w.A().Link(func(up bool, mbps int) { seen = append(seen, state{up, mbps}) })
	got := 0
	w.B().Receive(func([]byte) { got++ })

	if err := w.SetLink(false, 100); err != nil {
		t.Fatal(err)
	}
	w.A().Send(frame(60, 0))
	if got != 0 {
		t.Fatal("frame crossed a wire whose link is down")
	}
	if err := w.SetLink(true, 1000); err != nil {
		t.Fatal(err)
	}
	w.A().Send(frame(60, 0))
	if got != 1 {
		t.Fatalf("after link up got %d frames, want 1", got)
	}
	want := []state{{true, 100}, {false, 100}, {true, 1000}}
	if len(seen) != len(want) {
		t.Fatalf("link watcher saw %v, want %v", seen, want)
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Fatalf("link watcher saw %v, want %v", seen, want)
		}
	}
	ab, _ := w.Stats()
	if ab.Dropped != 1 || ab.Frames != 1 {
		t.Fatalf("stats %+v, want 1 dropped and 1 carried", ab)
	}
	if err := w.SetLink(true, 40); !errors.Is(err, errSpeed) {
		t.Fatalf("SetLink 40 Mb/s: %v, want unsupported speed", err)
	}
}

func TestNoReceiverDrops(t *testing.T) {
	w, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	w.A().Send(frame(60, 0))
	if ab, _ := w.Stats(); ab.Dropped != 1 {
		t.Fatalf("send to an end with no receiver: %+v", ab)
	}
}

// An endpoint that answers from inside its receive callback must not
// deadlock the wire, and concurrent senders must be safe.
func TestEchoAndConcurrentSenders(t *testing.T) {
	var buf bytes.Buffer
	w, err := New(Options{Pcap: &buf})
	if err != nil {
		t.Fatal(err)
	}
	b := w.B()
	b.Receive(func(f []byte) { b.Send(f) })
	var mu sync.Mutex
	echoed := 0
	w.A().Receive(func([]byte) { mu.Lock(); echoed++; mu.Unlock() })

	const senders, each = 4, 200
	var wg sync.WaitGroup
	for s := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				w.A().Send(frame(60+i%100, byte(s)))
			}
		}()
	}
	wg.Wait()
	if echoed != senders*each {
		t.Fatalf("echoed %d frames, want %d", echoed, senders*each)
	}
	if err := w.Err(); err != nil {
		t.Fatal(err)
	}
	_, pkts, err := ReadPcap(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkts) != 2*senders*each {
		t.Fatalf("capture holds %d frames, want %d", len(pkts), 2*senders*each)
	}
}

// The capture is checked byte by byte against the pcap format, not only
// through this package's reader.
func TestPcapFile(t *testing.T) {
	var buf bytes.Buffer
	w, err := New(Options{Pcap: &buf, Clock: &stepClock{}})
	if err != nil {
		t.Fatal(err)
	}
	w.B().Receive(func([]byte) {})
	w.A().Receive(func([]byte) {})
	frames := [][]byte{frame(60, 7), frame(1514, 9), frame(42, 1)}
	w.A().Send(frames[0])
	w.B().Send(frames[1])
	w.A().Send(frames[2])

	b := buf.Bytes()
	le := binary.LittleEndian
	if len(b) < 24 {
		t.Fatalf("capture is %d bytes", len(b))
	}
	if m := le.Uint32(b[0:]); m != 0xa1b23c4d {
		t.Fatalf("magic %#x", m)
	}
	if le.Uint16(b[4:]) != 2 || le.Uint16(b[6:]) != 4 || le.Uint32(b[20:]) != 1 || le.Uint32(b[16:]) < 1514 {
		t.Fatalf("file header % x", b[:24])
	}
	off := 24
	for i, f := range frames {
		if off+16 > len(b) {
			t.Fatalf("record %d truncated", i)
		}
		sec, nsec := le.Uint32(b[off:]), le.Uint32(b[off+4:])
		incl, orig := le.Uint32(b[off+8:]), le.Uint32(b[off+12:])
		stamp := time.Duration(i+1) * 1500 * time.Millisecond
		if time.Duration(sec)*time.Second+time.Duration(nsec) != stamp || nsec >= 1e9 {
			t.Errorf("record %d stamp %d.%09d, want %v", i, sec, nsec, stamp)
		}
		if int(incl) != len(f) || int(orig) != len(f) {
			t.Fatalf("record %d lengths %d/%d, want %d", i, incl, orig, len(f))
		}
		off += 16
		if !bytes.Equal(b[off:off+len(f)], f) {
			t.Fatalf("record %d data differs", i)
		}
		off += len(f)
	}
	if off != len(b) {
		t.Fatalf("%d trailing bytes", len(b)-off)
	}

	lt, pkts, err := ReadPcap(bytes.NewReader(b))
	if err != nil || lt != LinkTypeEthernet || len(pkts) != 3 || !bytes.Equal(pkts[1].Data, frames[1]) ||
		pkts[2].Time != 4500*time.Millisecond {
		t.Fatalf("ReadPcap: link %d, %d packets, err %v", lt, len(pkts), err)
	}
}

func TestReadPcapRejectsBadInput(t *testing.T) {
	var buf bytes.Buffer
	if _, err := NewPcapWriter(&buf); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()

	bad := bytes.Clone(good)
	bad[0] = 0
	if _, _, err := ReadPcap(bytes.NewReader(bad)); !errors.Is(err, ErrPcapFormat) {
		t.Errorf("bad magic: %v", err)
	}
	// A record claiming more bytes than the snap length.
	rec := make([]byte, 16)
	binary.LittleEndian.PutUint32(rec[8:], Snaplen+1)
	binary.LittleEndian.PutUint32(rec[12:], Snaplen+1)
	if _, _, err := ReadPcap(bytes.NewReader(append(bytes.Clone(good), rec...))); !errors.Is(err, ErrPcapFormat) {
		t.Errorf("oversized record: %v", err)
	}
	// A record cut short.
	binary.LittleEndian.PutUint32(rec[8:], 100)
	binary.LittleEndian.PutUint32(rec[12:], 100)
	if _, _, err := ReadPcap(bytes.NewReader(append(bytes.Clone(good), rec...))); err == nil {
		t.Error("truncated record read without error")
	}
	if _, _, err := ReadPcap(bytes.NewReader(good[:10])); err == nil {
		t.Error("truncated header read without error")
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(b []byte) (int, error) {
	if f.n == 0 {
		return 0, errors.New("disk full")
	}
	f.n--
	return len(b), nil
}

func TestCaptureErrorKept(t *testing.T) {
	if _, err := New(Options{Pcap: &failWriter{}}); err == nil {
		t.Fatal("New with a failing capture writer succeeded")
	}
	w, err := New(Options{Pcap: &failWriter{n: 1}})
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	w.B().Receive(func([]byte) { got++ })
	w.A().Send(frame(60, 0))
	if w.Err() == nil || got != 1 {
		t.Fatalf("capture error %v, delivered %d: the frame must still cross and the error be kept", w.Err(), got)
	}
}
