package nictest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ether9/ether9/drivers/gso"
	"github.com/ether9/ether9/drivers/internal/failtest"
	"github.com/ether9/ether9/drivers/nic"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// whole is a packet small enough to need no cutting, its checksum
// finished as a device would.
func whole(t *testing.T, v6 bool, seq uint32, n int) []byte {
	t.Helper()
	p, _, _ := GSOPacket(v6, seq, n)
	f := p.Data.Flatten()
	if err := gso.InsertChecksum(f, int(p.CsumStart), int(p.CsumOffset)); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestCheckGSO(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		t.Run(fmt.Sprintf("v6=%v", v6), func(t *testing.T) {
			f := whole(t, v6, 7, 1000)
			CheckGSO(t, [][]byte{f}, v6, 7, 1000)
			for _, tc := range []struct {
				name, want string
				frames     [][]byte
				seq        uint32
				total      int
			}{
				{"payload changed", "TCP checksum", [][]byte{append(f[:len(f)-1:len(f)-1], f[len(f)-1]^1)}, 7, 1000},
				{"another stream", "seq", [][]byte{f}, 8, 1000},
				{"short", "payload bytes", [][]byte{f}, 7, 1001},
				{"too long", "bytes on the wire", [][]byte{make([]byte, 1515)}, 7, 1000},
			} {
				if msg := failtest.First(func(tb testing.TB) { CheckGSO(tb, tc.frames, v6, tc.seq, tc.total) }); !strings.Contains(msg, tc.want) {
					t.Errorf("%s: %q, want it to say %q", tc.name, msg, tc.want)
				}
			}
		})
	}
	// Two IPv4 segments must count their IDs up.
	two := cut(t, false, 7, 2*GSOMSS(false), GSOMSS(false))
	ip := header.IPv4(two[1][header.EthernetMinimumSize:])
	ip.SetID(GSOID)
	ip.SetChecksum(0)
	ip.SetChecksum(^ip.CalculateChecksum())
	if msg := failtest.First(func(tb testing.TB) { CheckGSO(tb, two, false, 7, 2*GSOMSS(false)) }); !strings.Contains(msg, "id 100") {
		t.Errorf("a repeated IPv4 ID: %q", msg)
	}
}

// cut segments GSOPacket(v6, seq, total) at mss as software GSO does.
func cut(t *testing.T, v6 bool, seq uint32, total, mss int) [][]byte {
	t.Helper()
	p, _, _ := GSOPacket(v6, seq, total)
	plan, err := gso.NewPlan(&p.Data, p.GSO, mss, int(p.L3Len), int(p.L4Len))
	if err != nil {
		t.Fatal(err)
	}
	var frames [][]byte
	for k := range plan.Segments {
		f := make([]byte, plan.SegmentLen(k))
		if _, err := plan.Build(f, &p.Data, k); err != nil {
			t.Fatal(err)
		}
		frames = append(frames, f)
	}
	return frames
}

// TestCheckGSOAtMSS: segments cut at the packet's MSS pass, the
// last carrying the rest; cut shorter, or one missing, they fail.
func TestCheckGSOAtMSS(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		mss := GSOMSS(v6)
		for _, total := range []int{1, mss, 2 * mss, 5*mss + 7} {
			CheckGSO(t, cut(t, v6, 9, total, mss), v6, 9, total)
		}
		for _, tc := range []struct {
			name, want string
			frames     [][]byte
		}{
			{"mss-1", fmt.Sprintf("frame 0 of 6 carries %d payload bytes, want %d", mss-1, mss), cut(t, v6, 9, 5*mss+7, mss-1)},
			{"mss-8", fmt.Sprintf("carries %d payload bytes", mss-8), cut(t, v6, 9, 5*mss+7, mss-8)},
			{"last missing", "5 segments on the wire, want 6", cut(t, v6, 9, 5*mss+7, mss)[:5]},
		} {
			if msg := failtest.First(func(tb testing.TB) { CheckGSO(tb, tc.frames, v6, 9, 5*mss+7) }); !strings.Contains(msg, tc.want) {
				t.Errorf("v6=%v %s: %q, want it to say %q", v6, tc.name, msg, tc.want)
			}
		}
	}
}

// cutter is a queue that cuts each packet at mss and puts the segments
// on its wire one per reclaim, as a model deferring its work does.
type cutter struct {
	nic.Queue
	mss     int
	pending [][]byte
	wire    fakeWire
}

// fakeWire keeps the frames that reach it, as testhost.Peer does.
type fakeWire struct{ got [][]byte }

func (f *fakeWire) Frames() [][]byte { return f.got }
func (f *fakeWire) Len() int         { return len(f.got) }
func (f *fakeWire) Reset()           { f.got = nil }

func (c *cutter) Transmit(pkts []*nic.TxPacket) (int, error) {
	for _, p := range pkts {
		plan, err := gso.NewPlan(&p.Data, p.GSO, c.mss, int(p.L3Len), int(p.L4Len))
		if err != nil {
			return 0, err
		}
		for k := range plan.Segments {
			f := make([]byte, plan.SegmentLen(k))
			if _, err := plan.Build(f, &p.Data, k); err != nil {
				return 0, err
			}
			c.pending = append(c.pending, f)
		}
	}
	return len(pkts), nil
}

func (c *cutter) Reclaim() int {
	if len(c.pending) == 0 {
		return 0
	}
	c.wire.got = append(c.wire.got, c.pending[0])
	c.pending = c.pending[1:]
	return 1
}

func TestTransmitGSO(t *testing.T) {
	c := &cutter{mss: GSOMSS(false)}
	TransmitGSO(t, c, &c.wire, false, 3, 20000)
	c.mss--
	if msg := failtest.First(func(tb testing.TB) { TransmitGSO(tb, c, &c.wire, false, 3, 20000) }); !strings.Contains(msg, "carries 1459 payload bytes, want 1460") {
		t.Errorf("a queue cutting at MSS-1: %q", msg)
	}
	stuck := &cutter{mss: GSOMSS(true)}
	if msg := failtest.First(func(tb testing.TB) { TransmitGSO(tb, &stuckQueue{stuck}, &stuck.wire, true, 3, 20000) }); !strings.Contains(msg, "0 of 14 segments on the wire") {
		t.Errorf("a queue that sends nothing: %q", msg)
	}
}

// stuckQueue takes packets and never sends them.
type stuckQueue struct{ *cutter }

func (s *stuckQueue) Reclaim() int { return 0 }
