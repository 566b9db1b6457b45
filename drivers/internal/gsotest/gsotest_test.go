package gsotest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ether9/ether9/drivers/gso"
	"github.com/ether9/ether9/drivers/internal/failtest"
)

// whole is a packet small enough to need no cutting, its checksum
// finished as a device would.
func whole(t *testing.T, v6 bool, seq uint32, n int) []byte {
	t.Helper()
	p, _, _ := Packet(v6, seq, n)
	f := p.Data.Flatten()
	if err := gso.InsertChecksum(f, int(p.CsumStart), int(p.CsumOffset)); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestCheckSegments(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		t.Run(fmt.Sprintf("v6=%v", v6), func(t *testing.T) {
			f := whole(t, v6, 7, 1000)
			CheckSegments(t, [][]byte{f}, v6, 7, 1000)
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
				if msg := failtest.First(func(tb testing.TB) { CheckSegments(tb, tc.frames, v6, tc.seq, tc.total) }); !strings.Contains(msg, tc.want) {
					t.Errorf("%s: %q, want it to say %q", tc.name, msg, tc.want)
				}
			}
		})
	}
	// Two IPv4 segments must count their IDs up.
	f := whole(t, false, 7, 100)
	if msg := failtest.First(func(tb testing.TB) { CheckSegments(tb, [][]byte{f, f}, false, 7, 200) }); !strings.Contains(msg, "id 100") {
		t.Errorf("a repeated IPv4 ID: %q", msg)
	}
}
