package simmachine

import (
	"context"
	"testing"
	"time"

	"github.com/ether9/ether9/drivers/nic"
)

// TestDriversTuneAfterBoot: the e1000e behind the simulated VT-d unit
// boots copying every frame and, about a second after the stack is up,
// the system has it measure its copybreak (nic.Tuner): the measured
// costs show among its counters.
func TestDriversTuneAfterBoot(t *testing.T) {
	con := &console{}
	h, err := Start(context.Background(), testConfig(con))
	if err != nil {
		t.Fatalf("start: %v\nconsole:\n%s", err, con.text())
	}
	defer h.Close()
	ports := h.System.Ports()
	if len(ports) != 1 {
		t.Fatalf("%d ports", len(ports))
	}
	n := ports[0].NIC
	if _, ok := n.(nic.Tuner); !ok {
		t.Fatalf("%T is no nic.Tuner", n)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		stats := map[string]uint64{}
		for _, s := range n.Stats() {
			stats[s.Name] = s.Value
		}
		if _, ok := stats["copybreak_measured"]; ok && stats["copybreak_handoff_ns"] > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no copybreak measured 10 s after boot: stats %v\nconsole:\n%s", stats, con.text())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
