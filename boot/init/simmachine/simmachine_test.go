package simmachine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ether9/ether9/boot/init/status"
)

type console struct {
	mu    sync.Mutex
	lines []string
}

func (c *console) logf(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lines = append(c.lines, fmt.Sprintf(format, args...))
}

func (c *console) text() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.lines, "\n")
}

// waitFor polls the console until it has a line containing want.
func (c *console) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if strings.Contains(c.text(), want) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("console never said %q:\n%s", want, c.text())
}

func TestSimulatedMachineServesThroughForward(t *testing.T) {
	con := &console{}
	h, err := Start(context.Background(), testConfig(con))
	if err != nil {
		t.Fatalf("start: %v\nconsole:\n%s", err, con.text())
	}
	defer h.Close()
	defer func() {
		if t.Failed() {
			a, b := h.Wire.Stats()
			t.Logf("wire: machine->peer %+v, peer->machine %+v; model %+v", a, b, h.NIC.Counters())
		}
	}()
	for _, want := range []string{
		"pci 00:02.0 8086:10d3 e1000e",
		"iommu: translation on, 4-level",
		"ether0: link up 1000 Mb/s",
		"http: listening :80",
		"ping: first reply from 10.0.2.2 in ",
	} {
		con.waitFor(t, want)
	}
	base := "http://" + h.Forward.Addr().String()

	page := get(t, base+"/")
	for _, want := range []string{"ether9 platform sim\n", "iommu translation on 4-level\n", "iommu faults 0\n",
		"ether0 pci 00:02.0 8086:10d3 e1000e\n", "ether0 addr 10.0.2.15/24\n"} {
		if !strings.Contains(page, want) {
			t.Errorf("status page lacks %q:\n%s", want, page)
		}
	}

	const n = 1 << 20
	body := get(t, fmt.Sprintf("%s/source?bytes=%d", base, n))
	want := make([]byte, n)
	status.Pattern(0, want)
	if !bytes.Equal([]byte(body), want) {
		t.Fatalf("/source: %d bytes, not the pattern", len(body))
	}

	up := make([]byte, n)
	status.Pattern(12345, up)
	resp, err := authPost(base+"/sink", "application/octet-stream", bytes.NewReader(up))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	sum := sha256.Sum256(up)
	if strings.TrimSpace(string(got)) != hex.EncodeToString(sum[:]) {
		t.Fatalf("/sink answered %q, want %x", got, sum)
	}

	// Control commands reach the NIC and the IOMMU; bad ones are refused.
	for cmd, code := range map[string]int{"ether0 copybreak 0\niommu deferred 16": 200, "ether0 frob 1": 400, "ether7 tso off": 400, "machine poweroff": 400} {
		resp, err := authPost(base+"/ctl", "text/plain", strings.NewReader(cmd))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != code {
			t.Errorf("ctl %q: %s, want %d", cmd, resp.Status, code)
		}
	}
	if !strings.Contains(get(t, base+"/"), "iommu mode deferred\n") {
		t.Error("iommu mode not deferred after the ctl")
	}
	// Still serving in the new modes.
	if body := get(t, base+"/source?bytes=100000"); len(body) != 100000 {
		t.Fatalf("/source after ctl: %d bytes", len(body))
	}

	// Every DMA went through the VT-d model and none faulted.
	if st := h.System.IOMMU().Stats(); st.Faults != 0 || st.Maps == 0 {
		t.Fatalf("iommu after the transfers: %d faults, %d maps", st.Faults, st.Maps)
	}
	if c := h.NIC.Counters(); c.RxDMAFaults+c.TxDMAFaults != 0 || c.TxFrames == 0 {
		t.Fatalf("model counters: %+v", c)
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := authGet(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s, %v", url, resp.Status, err)
	}
	return string(b)
}
