package shell

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// FuzzLineEditing types any bytes at the shell: it ends when the input
// does, echoes nothing but printable text and the editor's own \b, \r,
// \n, and a ctl is written only by a line that redirects ("> FILE"), so
// garbled or refused lines change nothing.
func FuzzLineEditing(f *testing.F) {
	for _, s := range []string{
		"echo copybreak 2048 > /net/ether0/ctl\r",
		"echo copybreak 2\b48 > /net/ether0/ctl\n",
		"echo copybreak 99\x15cat /net/ether0/ctl\r",
		"echo copybreak 1 > /net/ether0/ctl\x03\r",
		"echo copybreak x > /net/ether0/ctl\r",
		"ls\rcat /net/ether0/stats\r\x04",
		"\x7f\x7f\x08\x15\x03\x04",
		"echo \x1b[A\x00\xff > /net/ether0/ctl\r",
		"ps\r", "ping 10.0.2.2\r\x03", "help\r",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		s, k := newShell(t)
		var out bytes.Buffer
		done := make(chan error, 1)
		go func() { done <- s.Run(context.Background(), bytes.NewReader(in), &out) }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the shell did not end with its input %q", in)
		}
		for i, c := range out.Bytes() {
			if (c < 0x20 || c >= 0x7f) && c != '\r' && c != '\n' && c != '\b' {
				t.Fatalf("output byte %d is %#x:\n%q", i, c, out.String())
			}
		}
		if !bytes.Contains(in, []byte(">")) && k.v.Load() != 0 {
			t.Fatalf("input %q without a redirect set copybreak %d", in, k.v.Load())
		}
	})
}
