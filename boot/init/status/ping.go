package status

import (
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Bounds of the ping series GET /debug/ping asks for, and how long each
// request waits for its answer.
const (
	MaxPingSeries = 1000
	MaxPingGap    = 10 * time.Second
	PingTimeout   = 2 * time.Second
)

// PingQuery reads GET /debug/ping?n=N&gap=D: N echo requests, D apart.
func PingQuery(r *http.Request) (n int, gap time.Duration, err error) {
	n, err = strconv.Atoi(r.FormValue("n"))
	if err != nil || n < 1 || n > MaxPingSeries {
		return 0, 0, fmt.Errorf("n: want 1 to %d", MaxPingSeries)
	}
	gap, err = time.ParseDuration(r.FormValue("gap"))
	if err != nil || gap < 0 || gap > MaxPingGap {
		return 0, 0, fmt.Errorf("gap: want a duration up to %v", MaxPingGap)
	}
	return n, gap, nil
}

// PingStats is what a series of echo requests measured; its String is
// the answer to GET /debug/ping that the self-test reads.
type PingStats struct {
	Sent int
	RTTs []time.Duration // of the answered requests, in ascending order
}

// Quantile is the round trip that fraction q (0 to 1) of the answered
// requests did not exceed (nearest rank), 0 when none was answered.
func (p PingStats) Quantile(q float64) time.Duration {
	if len(p.RTTs) == 0 {
		return 0
	}
	i := int(q*float64(len(p.RTTs))+0.999999) - 1
	return p.RTTs[min(max(i, 0), len(p.RTTs)-1)]
}

func (p PingStats) String() string {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	return fmt.Sprintf("sent %d received %d median %.3fms p99 %.3fms max %.3fms",
		p.Sent, len(p.RTTs), ms(p.Quantile(0.5)), ms(p.Quantile(0.99)), ms(p.Quantile(1)))
}
