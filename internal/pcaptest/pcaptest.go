// Package pcaptest is test support for packet captures: a pcap stream
// parsed into TCP frames (with gopacket's reader and decoders), and the
// count of frames Debian's tshark finds in a capture.
package pcaptest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
)

// Frame is one captured frame as a test looks at it.
type Frame struct {
	When             time.Time
	Len              int // on the wire; Data may be cut at the snaplen
	Data             []byte
	SrcPort, DstPort uint16 // 0 for a frame that is not TCP
	Payload          []byte // the TCP payload
}

// Read parses a pcap stream of Ethernet frames, sending each frame on
// out as it comes, until the stream ends; it returns what ended it (nil
// at a clean end). out is closed on return.
func Read(r io.Reader, out chan<- Frame) error {
	defer close(out)
	pr, err := pcapgo.NewReader(r)
	if err != nil {
		return fmt.Errorf("pcap file header: %w", err)
	}
	if pr.LinkType() != layers.LinkTypeEthernet {
		return fmt.Errorf("pcap link type %v, want Ethernet", pr.LinkType())
	}
	for n := 0; ; n++ {
		data, ci, err := pr.ReadPacketData()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("pcap record %d: %w", n, err)
		}
		f := Frame{When: ci.Timestamp, Len: ci.Length, Data: data}
		p := gopacket.NewPacket(data, layers.LayerTypeEthernet, gopacket.Lazy)
		if tcp, ok := p.Layer(layers.LayerTypeTCP).(*layers.TCP); ok {
			f.SrcPort, f.DstPort, f.Payload = uint16(tcp.SrcPort), uint16(tcp.DstPort), tcp.Payload
		}
		out <- f
	}
}

// Tshark is the path of tshark. Without it the test is skipped, and
// under CI=true (where tools/lib/install.sh installed it) it fails.
func Tshark(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("tshark")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("tshark is not installed (tools/lib/install.sh installs it): %v", err)
		}
		t.Skip("skipping: tshark is not installed (apt-get install tshark, or tools/test installs it)")
	}
	return p
}

// TsharkFile is a capture's bytes in a file, for tshark to read as a
// user would (curl ... | tshark -r -).
type TsharkFile struct {
	tshark, file string
}

// NewTsharkFile writes capture where tshark reads it; without tshark it
// skips the test (Tshark).
func NewTsharkFile(t testing.TB, capture []byte) TsharkFile {
	t.Helper()
	tshark := Tshark(t)
	file := filepath.Join(t.TempDir(), "capture.pcap")
	if err := os.WriteFile(file, capture, 0o644); err != nil {
		t.Fatal(err)
	}
	return TsharkFile{tshark: tshark, file: file}
}

// Count is how many frames tshark shows under the display filter.
func (f TsharkFile) Count(t testing.TB, filter string) int {
	t.Helper()
	return tsharkCount(t, f.tshark, f.file, filter)
}

// tsharkCount is how many frames of the capture file pcap tshark shows
// under the display filter.
func tsharkCount(t testing.TB, tshark, pcap, filter string) int {
	t.Helper()
	cmd := exec.Command(tshark, "-n", "-r", pcap, "-Y", filter, "-T", "fields", "-e", "frame.number")
	// tshark wants a home for its profile; a test gives it a fresh one.
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tshark -r %s -Y %q: %v\n%s", pcap, filter, err, stderr.String())
	}
	return len(strings.Fields(string(out)))
}
