package status

import (
	"net/http/httptest"
	"testing"
	"time"
)

func TestPingStatsQuantile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		var d []time.Duration
		for _, x := range v {
			d = append(d, time.Duration(x)*time.Millisecond)
		}
		return d
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	for _, tc := range []struct {
		rtts []time.Duration
		q    float64
		want time.Duration
	}{
		{nil, 0.5, 0},
		{ms(7), 0.99, 7 * time.Millisecond},
		{ms(1, 2, 3, 4), 0.5, 2 * time.Millisecond},
		{ms(1, 2, 3, 4, 5), 0.5, 3 * time.Millisecond},
		{ms(hundred...), 0.99, 99 * time.Millisecond},
		{ms(hundred...), 1, 100 * time.Millisecond},
		{ms(hundred[:50]...), 0.99, 50 * time.Millisecond},
	} {
		if got := (PingStats{RTTs: tc.rtts}).Quantile(tc.q); got != tc.want {
			t.Errorf("Quantile(%v) of %d round trips = %v, want %v", tc.q, len(tc.rtts), got, tc.want)
		}
	}
}

func TestPingQuery(t *testing.T) {
	r := httptest.NewRequest("GET", "/debug/ping?n=50&gap=100ms", nil)
	if n, gap, err := PingQuery(r); err != nil || n != 50 || gap != 100*time.Millisecond {
		t.Errorf("n %d gap %v, %v", n, gap, err)
	}
	for _, q := range []string{"n=0&gap=1s", "n=1001&gap=1s", "n=x&gap=1s", "n=5&gap=-1s", "n=5&gap=11s", "n=5"} {
		if _, _, err := PingQuery(httptest.NewRequest("GET", "/debug/ping?"+q, nil)); err == nil {
			t.Errorf("%q accepted", q)
		}
	}
}
