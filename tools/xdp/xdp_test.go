package xdp

import (
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for i, n := range testNames {
		if got, err := ParseTest(n); err != nil || got != Test(i) || got.String() != n {
			t.Errorf("ParseTest(%q) = %v, %v", n, got, err)
		}
	}
	for i, n := range pathNames {
		if got, err := ParsePath(n); err != nil || got != Path(i) || got.String() != n {
			t.Errorf("ParsePath(%q) = %v, %v", n, got, err)
		}
	}
	if _, err := ParseTest("rxpush"); err == nil {
		t.Error("unknown test accepted")
	}
	if _, err := ParsePath("fast"); err == nil {
		t.Error("unknown path accepted")
	}
	if _, err := Run(Config{Test: RxDrop, Path: ZeroCopy, Size: 10, Duration: time.Millisecond}); err == nil {
		t.Error("10-byte frames accepted")
	}
	if _, err := Run(Config{NIC: "e1000e", Test: RxDrop, Path: ZeroCopy, Size: 60, Duration: time.Millisecond}); err == nil {
		t.Error("a NIC with no queue takeover accepted")
	}
}
