package image

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"os"
	"testing"
)

var codeLikeOut = flag.String("codelike", "", "write codeLike(codeLikeSize) to this file for making testdata")

const codeLikeSize = 300_000

func TestWriteCodeLike(t *testing.T) {
	if *codeLikeOut == "" {
		t.Skip("-codelike not given")
	}
	if err := os.WriteFile(*codeLikeOut, codeLike(codeLikeSize), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestUnxz(t *testing.T) {
	want := codeLike(codeLikeSize)
	for _, name := range []string{"code.crc32.xz", "code.crc64-blocks.xz", "code.sha256-nobcj.xz"} {
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile("testdata/" + name)
			if err != nil {
				t.Fatal(err)
			}
			got, err := unxz(src)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("decoded %d bytes differ from the %d encoded", len(got), len(want))
			}
		})
	}
}

// Damage anywhere is an error: in the data (the LZMA2 decoder or the check
// notices), in the check itself, in the container's framing.
func TestUnxzDetectsCorruption(t *testing.T) {
	src, err := os.ReadFile("testdata/code.crc32.xz")
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]func([]byte) []byte{
		"check": func(b []byte) []byte { // the block's CRC32 sits just before the index
			index := len(b) - 12 - int(binary.LittleEndian.Uint32(b[len(b)-8:])+1)*4
			b[index-1] ^= 1
			return b
		},
		"data":         func(b []byte) []byte { b[len(b)/2] ^= 0x40; return b },
		"magic":        func(b []byte) []byte { b[0] = 0; return b },
		"footer":       func(b []byte) []byte { b[len(b)-1] = 'Q'; return b },
		"stream flags": func(b []byte) []byte { b[7] = 0x03; return b },
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			b := mutate(append([]byte(nil), src...))
			if _, err := unxz(b); !errors.Is(err, errXZ) {
				t.Fatalf("err = %v, want an xz error", err)
			}
		})
	}
}

func TestUnxzTruncated(t *testing.T) {
	src, err := os.ReadFile("testdata/code.crc64-blocks.xz")
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; n < len(src); n += 97 {
		if _, err := unxz(src[:n]); err == nil {
			t.Fatalf("truncated to %d of %d bytes: no error", n, len(src))
		}
	}
}

func TestBCJShortBuffers(t *testing.T) {
	for n := 0; n <= 8; n++ {
		b := bytes.Repeat([]byte{0xe8}, n)
		bcjX86Decode(b, 0)
		if n <= 4 && !bytes.Equal(b, bytes.Repeat([]byte{0xe8}, n)) {
			t.Fatalf("%d bytes: changed to % x; the last four are never converted", n, b)
		}
	}
}
