package status

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
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
//	POST /sink             reads the body, answers with its SHA-256 in hex and its length
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
// in hex, its length in X-Bytes.
func Sink(w http.ResponseWriter, r *http.Request) {
	h := sha256.New()
	n, err := io.Copy(h, r.Body)
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
	fmt.Fprintf(w, "%s\n", hex.EncodeToString(h.Sum(nil)))
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
