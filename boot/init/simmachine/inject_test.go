package simmachine

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/ether9/ether9/boot/init/status"
)

var armedRe = regexp.MustCompile(`ether0: debug: rx descriptor (\d+) armed with unmapped iova (0x[0-9a-f]+)`)

// The debug ctl, posted through the forward like any command, points one
// RX descriptor of the running NIC at an unmapped IOVA. The next upload
// runs into it: the refused write is printed by the fault watcher with the
// NIC's source id and that IOVA, the driver drops the frame, TCP sends it
// again, and both directions still carry data intact.
func TestInjectedUnmappedRxBuffer(t *testing.T) {
	_, con, base := serving(t)

	for cmd, code := range map[string]int{"ether0 debug": 400, "ether0 debug inject-unmapped": 400, "ether0 debug inject-unmapped-rx": 200} {
		if got := postCtl(t, base, cmd); got != code {
			t.Fatalf("ctl %q: %d, want %d", cmd, got, code)
		}
	}
	// 1 MiB up: far more frames than the ring holds, so the device comes
	// round to the poisoned descriptor in the middle of it.
	upload(t, base, 1<<20)
	m := armedRe.FindStringSubmatch(con.text())
	if m == nil {
		t.Fatalf("no descriptor armed with the hole:\n%s", con.text())
	}
	con.waitFor(t, "iommu: fault 00:02.0 write "+m[2]+" ")
	con.waitFor(t, "ether0: rx: dma fault: dropped ")

	// And the other way, after the fault.
	want := make([]byte, 1<<20)
	status.Pattern(0, want)
	if body := get(t, base+"/source?bytes=1048576"); body != string(want) {
		t.Fatalf("/source after the fault: %d bytes, not the pattern", len(body))
	}
	page := get(t, base+"/")
	for _, want := range []string{"iommu faults 1\n", "iommu fault 00:02.0 write " + m[2]} {
		if !strings.Contains(page, want) {
			t.Errorf("status page lacks %q:\n%s", want, page)
		}
	}
	if drops := counter(page, "ether0 rx_drop_dma "); drops < 1 {
		t.Errorf("ether0 rx_drop_dma %d, want at least the faulted frame:\n%s", drops, page)
	}
	if n := strings.Count(con.text(), "iommu: fault "); n != 1 {
		t.Fatalf("fault printed %d times:\n%s", n, con.text())
	}
}

func postCtl(t *testing.T, base, cmd string) int {
	t.Helper()
	resp, err := authPost(base+"/ctl", "text/plain", strings.NewReader(cmd))
	if err != nil {
		t.Fatalf("ctl %q: %v", cmd, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// upload posts n random bytes to /sink and checks the SHA-256 it answers.
func upload(t *testing.T, base string, n int) {
	t.Helper()
	data := make([]byte, n)
	rand.NewChaCha8([32]byte{'f', 'a', 'u', 'l', 't'}).Read(data)
	resp, err := authPost(base+"/sink", "application/octet-stream", bytes.NewReader(data))
	if err != nil {
		t.Fatalf("POST /sink: %v", err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	sum := sha256.Sum256(data)
	if strings.TrimSpace(string(got)) != hex.EncodeToString(sum[:]) {
		t.Fatalf("/sink answered %q, want %x", got, sum)
	}
}

// counter returns the value of the status page line starting with prefix,
// or -1.
func counter(page, prefix string) int64 {
	for _, l := range strings.Split(page, "\n") {
		if v, ok := strings.CutPrefix(l, prefix); ok {
			var n int64
			if _, err := fmt.Sscan(v, &n); err == nil {
				return n
			}
		}
	}
	return -1
}
