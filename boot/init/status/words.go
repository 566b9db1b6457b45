package status

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// wordKey marks the words of Words' stream, so that a word of zeros, of
// another stream or of the stack's own data is not taken for one.
const wordKey = 0x9e3779b97f4a7c15

// Words fills b with the bytes of the word stream starting at offset off:
// each 8-byte little-endian word at stream offset o (a multiple of 8)
// holds o^wordKey. A receiver can tell of each damaged word where in the
// stream its bytes came from, if they came from it at all: the damage's
// signature (bytes of an earlier frame, of the next, zeros, noise).
func Words(off int64, b []byte) {
	for i := range b {
		o := off + int64(i)
		w := uint64(o&^7) ^ wordKey
		b[i] = byte(w >> (8 * (o & 7)))
	}
}

// damage checks a stream against Words and describes what differs: the
// words that do, the first few with what they hold.
type damage struct {
	off     int64 // stream offset of the next byte written
	part    [8]byte
	bad     int64 // words that differ
	samples []string
}

const damageSamples = 4

func (d *damage) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		k := copy(d.part[d.off&7:], p)
		d.off += int64(k)
		p = p[k:]
		if d.off&7 == 0 {
			d.word(d.off-8, binary.LittleEndian.Uint64(d.part[:]))
		}
	}
	return n, nil
}

// word judges the word at stream offset o.
func (d *damage) word(o int64, got uint64) {
	want := uint64(o) ^ wordKey
	if got == want {
		return
	}
	d.bad++
	if len(d.samples) == damageSamples {
		return
	}
	from := "not of the stream"
	if src := int64(got ^ wordKey); got != 0 && src&7 == 0 && src >= 0 && src < 1<<40 {
		from = fmt.Sprintf("the word of offset %d (%+d)", src, src-o)
	} else if got == 0 {
		from = "zeros"
	}
	d.samples = append(d.samples, fmt.Sprintf("at %d %016x, %s", o, got, from))
}

// String says what differs, or "none"; a tail shorter than a word is not
// judged.
func (d *damage) String() string {
	if d.bad == 0 {
		return "none"
	}
	return fmt.Sprintf("%d words differ; %s", d.bad, strings.Join(d.samples, "; "))
}
