package status

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// MaxSource is the most /source sends in one response.
const MaxSource = 1 << 30

// Pattern fills b with the bytes of the /source stream starting at offset
// off. The stream is deterministic so that a receiver can check it without
// being told what was sent; it does not repeat with any short period.
func Pattern(off int64, b []byte) {
	for i := range b {
		x := uint64(off) + uint64(i)
		b[i] = byte(x ^ x>>8 ^ x>>16 ^ x>>24)
	}
}

// Handler serves the status page and the bulk-data endpoints:
//
//	GET  /                 the status page (text/plain)
//	GET  /source?bytes=N   N bytes of Pattern, with the SHA-256 in the X-Sha256 trailer
//	POST /sink             reads the body, answers with its SHA-256 in hex, its length and each MiB's
//	                       (?words=1: the Words stream expected, and its damage described)
//	POST /ctl              applies each line of the body as a control command, in order
//
// ctl may be nil: then /ctl is not served.
func Handler(snapshot func() Snapshot, ctl func(cmd string) error) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		Write(w, snapshot())
	})
	mux.HandleFunc("GET /source", Source)
	mux.HandleFunc("POST /sink", Sink)
	if ctl != nil {
		mux.HandleFunc("POST /ctl", func(w http.ResponseWriter, r *http.Request) { control(w, r, ctl) })
	}
	return mux
}

// Source serves GET /source?bytes=N: N bytes of Pattern, chunked, with
// their SHA-256 in the X-Sha256 trailer.
func Source(w http.ResponseWriter, r *http.Request) {
	n, err := strconv.ParseInt(r.URL.Query().Get("bytes"), 10, 64)
	if err != nil || n < 0 || n > MaxSource {
		http.Error(w, fmt.Sprintf("source: bytes=%q: want an integer from 0 to %d", r.URL.Query().Get("bytes"), MaxSource), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	// Chunked, not Content-Length: trailers need chunked encoding.
	w.Header().Set("Trailer", "X-Sha256")
	h := sha256.New()
	// No larger than the response: a 64 KiB buffer allocated and zeroed
	// for a 0-byte GET made the handler 12-36 times as costly
	// (BenchmarkSource) and 64 KiB of garbage per request.
	buf := make([]byte, min(n, 64<<10))
	for off := int64(0); off < n; {
		chunk := buf[:min(int64(len(buf)), n-off)]
		Pattern(off, chunk)
		h.Write(chunk)
		if _, err := w.Write(chunk); err != nil {
			return // the client went away
		}
		off += int64(len(chunk))
	}
	w.Header().Set("X-Sha256", hex.EncodeToString(h.Sum(nil)))
}

// Sink serves POST /sink: it reads the body and answers with its SHA-256
// in hex, its length in X-Bytes, and in X-Sha256-Blocks the first 8 bytes
// of the SHA-256 of each SinkBlock of it, comma-separated: when a body
// arrives spoilt, the sender learns where (BlockSums). With ?words=1 the
// body is taken for the Words stream and X-Damage says which words differ
// and where their bytes came from.
func Sink(w http.ResponseWriter, r *http.Request) {
	h := sha256.New()
	b := &blockSums{}
	dst := []io.Writer{h, b}
	var d *damage
	if r.URL.Query().Get("words") == "1" {
		d = &damage{}
		dst = append(dst, d)
	}
	n, err := io.Copy(io.MultiWriter(dst...), r.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		code := http.StatusBadRequest
		if errors.As(err, &tooBig) {
			code = http.StatusRequestEntityTooLarge
		}
		http.Error(w, fmt.Sprintf("sink: read after %d bytes: %v", n, err), code)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Bytes", strconv.FormatInt(n, 10))
	w.Header().Set("X-Sha256-Blocks", strings.Join(b.sums(), ","))
	if d != nil {
		w.Header().Set("X-Damage", d.String())
	}
	fmt.Fprintf(w, "%s\n", hex.EncodeToString(h.Sum(nil)))
}

// SinkBlock is the size of the blocks /sink hashes one by one.
const SinkBlock = 1 << 20

// BlockSums is what /sink answers in X-Sha256-Blocks for data.
func BlockSums(data []byte) []string {
	b := &blockSums{}
	b.Write(data)
	return b.sums()
}

// blockSums hashes what is written to it SinkBlock bytes at a time.
type blockSums struct {
	h    hash.Hash
	n    int
	done []string
}

func (b *blockSums) Write(p []byte) (int, error) {
	total := len(p)
	for len(p) > 0 {
		if b.h == nil {
			b.h, b.n = sha256.New(), 0
		}
		k := min(len(p), SinkBlock-b.n)
		b.h.Write(p[:k])
		b.n += k
		p = p[k:]
		if b.n == SinkBlock {
			b.done = append(b.done, hex.EncodeToString(b.h.Sum(nil)[:8]))
			b.h = nil
		}
	}
	return total, nil
}

func (b *blockSums) sums() []string {
	if b.h != nil {
		b.done = append(b.done, hex.EncodeToString(b.h.Sum(nil)[:8]))
		b.h = nil
	}
	return b.done
}

// maxCtl bounds a /ctl request: commands are short lines.
const maxCtl = 64 << 10

// control applies the body's lines one by one and stops at the first that
// fails, saying which; the ones before it stay applied.
func control(w http.ResponseWriter, r *http.Request, ctl func(string) error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxCtl))
	if err != nil {
		http.Error(w, fmt.Sprintf("ctl: %v", err), http.StatusRequestEntityTooLarge)
		return
	}
	n := 0
	for _, line := range strings.Split(string(body), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if err := ctl(line); err != nil {
			http.Error(w, fmt.Sprintf("ctl %q: %v (%d applied before it)", line, err, n), http.StatusBadRequest)
			return
		}
		n++
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintf(w, "ok %d\n", n)
}
