package status

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func testSnapshot() Snapshot {
	return Snapshot{
		Uptime:   1500 * time.Millisecond,
		Platform: "sim",
		IOMMU: &IOMMU{Translation: true, Levels: 4, Mode: "strict", FaultCount: 1,
			Counters: []Counter{{"maps", 12}}, Faults: []string{"source 00:02.0 write iova 0x5000 reason 6"}},
		NICs: []NIC{{Name: "ether0", PCI: "00:02.0", ID: "8086:10d3", Driver: "e1000e", MAC: "52:54:00:12:34:56",
			Link: "up 1000 Mb/s full duplex", IRQ: "uio INTx 11", Addr: "10.0.2.15/24", Gateway: "10.0.2.2", Counters: []Counter{{"rx_packets", 7}}}},
		TCP: []Counter{{"retransmits", 3}},
	}
}

func TestStatusPage(t *testing.T) {
	srv := httptest.NewServer(Handler(testSnapshot, nil))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		"ether9 uptime 1.500s\n",
		"iommu translation on 4-level\n",
		"iommu faults 1\n",
		"iommu maps 12\n",
		"iommu fault source 00:02.0 write iova 0x5000 reason 6\n",
		"ether0 pci 00:02.0 8086:10d3 e1000e\n",
		"ether0 link up 1000 Mb/s full duplex\n",
		"ether0 irq uio INTx 11\n",
		"ether0 addr 10.0.2.15/24\n",
		"ether0 rx_packets 7\n",
		"tcp retransmits 3\n",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("status page lacks %q:\n%s", want, body)
		}
	}
	if resp, err := http.Get(srv.URL + "/nothing"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown path: %v %v, want 404", err, resp.Status)
	}
}

func TestSourceIsDeterministicWithTrailer(t *testing.T) {
	srv := httptest.NewServer(Handler(testSnapshot, nil))
	defer srv.Close()
	const n = 200_000
	resp, err := http.Get(srv.URL + "/source?bytes=200000")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	want := make([]byte, n)
	Pattern(0, want)
	if !bytes.Equal(body, want) {
		t.Fatalf("got %d bytes not matching the pattern", len(body))
	}
	sum := sha256.Sum256(want)
	if got := resp.Trailer.Get("X-Sha256"); got != hex.EncodeToString(sum[:]) {
		t.Fatalf("trailer X-Sha256 %q, want %x", got, sum)
	}
	// Pattern at an offset continues the same stream.
	part := make([]byte, 1000)
	Pattern(70_000, part)
	if !bytes.Equal(part, want[70_000:71_000]) {
		t.Fatal("Pattern at an offset differs from the stream")
	}
	if bytes.Equal(want[:256], want[256:512]) || bytes.Equal(want[:65536], want[65536:131072]) {
		t.Fatal("pattern repeats with a short period")
	}
}

func TestSourceRejectsBadCount(t *testing.T) {
	srv := httptest.NewServer(Handler(testSnapshot, nil))
	defer srv.Close()
	for _, q := range []string{"", "?bytes=-1", "?bytes=x", "?bytes=9999999999999"} {
		resp, err := http.Get(srv.URL + "/source" + q)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("/source%s: %s, want 400", q, resp.Status)
		}
	}
}

func TestSinkHashesBody(t *testing.T) {
	srv := httptest.NewServer(Handler(testSnapshot, nil))
	defer srv.Close()
	data := make([]byte, 2*SinkBlock+300_000)
	Pattern(5, data)
	resp, err := http.Post(srv.URL+"/sink", "application/octet-stream", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	sum := sha256.Sum256(data)
	if string(body) != hex.EncodeToString(sum[:])+"\n" || resp.Header.Get("X-Bytes") != strconv.Itoa(len(data)) {
		t.Fatalf("sink answered %q (%s bytes), want %x", body, resp.Header.Get("X-Bytes"), sum)
	}
	// Each block's hash, the last one short, computed here the long way.
	var want []string
	for off := 0; off < len(data); off += SinkBlock {
		b := sha256.Sum256(data[off:min(off+SinkBlock, len(data))])
		want = append(want, hex.EncodeToString(b[:8]))
	}
	if got := resp.Header.Get("X-Sha256-Blocks"); got != strings.Join(want, ",") {
		t.Errorf("X-Sha256-Blocks %q, want %q", got, strings.Join(want, ","))
	}
	if got := BlockSums(data); !slices.Equal(got, want) {
		t.Errorf("BlockSums %q, want %q", got, want)
	}
}

func TestCtlAppliesLinesInOrder(t *testing.T) {
	var got []string
	ctl := func(cmd string) error {
		if cmd == "bad" {
			return errors.New("unknown command")
		}
		got = append(got, cmd)
		return nil
	}
	srv := httptest.NewServer(Handler(testSnapshot, ctl))
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/ctl", "text/plain", strings.NewReader("ether0 copybreak 0\n\niommu deferred\n"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "ok 2\n" || len(got) != 2 || got[1] != "iommu deferred" {
		t.Fatalf("ctl: %s %q, applied %q", resp.Status, body, got)
	}
	got = nil
	resp, err = http.Post(srv.URL+"/ctl", "text/plain", strings.NewReader("a\nbad\nc\n"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "unknown command") || len(got) != 1 {
		t.Fatalf("bad ctl: %s %q, applied %q", resp.Status, body, got)
	}
	if resp, err := http.Post(srv.URL+"/ctl", "text/plain", nil); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("empty ctl: %v %v", err, resp.Status)
	}
}

func TestStatusPageUnits(t *testing.T) {
	s := testSnapshot()
	s.IOMMU.Units = []IOMMUUnit{
		{Base: 0xfed80000, Scope: "endpoint 00:02.0", State: "idle"},
		{Base: 0xfed91000, Scope: "bridge 00:1c.0 buses 01-02", State: "on", Levels: 4, Domains: 1, Faults: 2},
		{Base: 0xfed90000, Scope: "include-all", State: "failed"},
	}
	var b strings.Builder
	if err := Write(&b, s); err != nil {
		t.Fatal(err)
	}
	want := "iommu unit 0xfed80000 idle scope endpoint 00:02.0\n" +
		"iommu unit 0xfed91000 on 4-level domains 1 faults 2 scope bridge 00:1c.0 buses 01-02\n" +
		"iommu unit 0xfed90000 failed scope include-all\n"
	if !strings.Contains(b.String(), want) {
		t.Errorf("status page lacks the unit lines %q:\n%s", want, b.String())
	}
	if strings.Count(b.String(), "iommu faults ") != 1 {
		t.Errorf("the unit lines repeat the machine's fault line:\n%s", b.String())
	}
}

// BenchmarkSource is GET /source's cost in the handler, for the 0-byte
// requests the self-test counts and a 64 KiB one.
func BenchmarkSource(b *testing.B) {
	for _, n := range []int{0, 64 << 10} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			r := httptest.NewRequest("GET", "/source?bytes="+strconv.Itoa(n), nil)
			b.ReportAllocs()
			for b.Loop() {
				Source(httptest.NewRecorder(), r)
			}
		})
	}
}

// /sink?words=1 names the words that differ and where their bytes came
// from: another offset of the stream, zeros, or something else.
func TestSinkWordsDamage(t *testing.T) {
	srv := httptest.NewServer(Handler(testSnapshot, nil))
	defer srv.Close()
	post := func(data []byte) string {
		t.Helper()
		resp, err := http.Post(srv.URL+"/sink?words=1", "application/octet-stream", bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.Header.Get("X-Damage")
	}
	data := make([]byte, 3*SinkBlock+5)
	Words(0, data)
	if got := post(data); got != "none" {
		t.Fatalf("an intact stream: X-Damage %q", got)
	}
	copy(data[4096:4096+16], data[1024:1024+16]) // two words of an earlier frame
	clear(data[100000 : 100000+8])
	data[2*SinkBlock+3] ^= 0x40
	got := post(data)
	for _, want := range []string{
		"4 words differ",
		"at 4096 ", "the word of offset 1024 (-3072)",
		"at 4104 ", "the word of offset 1032 (-3072)",
		"at 100000 0000000000000000, zeros",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("X-Damage %q lacks %q", got, want)
		}
	}
	// A word cut short by a read's end is judged whole.
	var d damage
	w := make([]byte, 24)
	Words(0, w)
	d.Write(w[:5])
	d.Write(w[5:13])
	d.Write(w[13:])
	if d.String() != "none" {
		t.Errorf("words written in pieces: %s", d.String())
	}
}
