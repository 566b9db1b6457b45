package nic

import "testing"

func TestQueuePairs(t *testing.T) {
	for _, tc := range []struct{ asked, part, want int }{
		{0, 4, 4}, // the driver's own count
		{1, 4, 1},
		{2, 4, 2},
		{8, 4, 4}, // never more than the part has
		{3, 0, 1}, // never none
	} {
		dev := Device{Queues: tc.asked}
		if got := dev.QueuePairs(tc.part); got != tc.want {
			t.Errorf("Queues %d, part %d: %d pairs, want %d", tc.asked, tc.part, got, tc.want)
		}
	}
}
