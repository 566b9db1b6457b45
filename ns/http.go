package ns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"
)

// Handler serves the tree read-only over HTTP under prefix ("/ns"): a
// file's content, or a directory's names one per line (directories end
// in "/"), as text; a stream as it comes, until it ends or the client
// goes (the read-only view refuses streams with 403).
func (n *Namespace) Handler(prefix string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "ns: read-only over HTTP", http.StatusMethodNotAllowed)
			return
		}
		p := Clean(strings.TrimPrefix(r.URL.Path, prefix))
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		e, err := n.Stat(p)
		if err != nil {
			httpError(w, err)
			return
		}
		if e.Stream {
			n.stream(w, r, p)
			return
		}
		if !e.Dir {
			s, err := n.ReadFile(p)
			if err != nil {
				httpError(w, err)
				return
			}
			fmt.Fprint(w, s)
			return
		}
		ents, err := n.List(p)
		if err != nil {
			httpError(w, err)
			return
		}
		for _, e := range ents {
			if e.Dir {
				fmt.Fprintf(w, "%s/\n", e.Name)
			} else {
				fmt.Fprintf(w, "%s\n", e.Name)
			}
		}
	})
}

// streamWrite is how long a stream's client may take to accept one
// write: one that stops reading gives its connection back.
const streamWrite = 30 * time.Second

// stream copies the stream at p to the client, each read as it comes.
func (n *Namespace) stream(w http.ResponseWriter, r *http.Request, p string) {
	w.Header().Set("Content-Type", "application/octet-stream")
	if r.Method == http.MethodHead {
		return
	}
	local := ""
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		local = a.String()
	}
	rc, err := n.Open(p, ParseConn(local, r.RemoteAddr))
	if err != nil {
		if errors.Is(err, ErrPermission) || errors.Is(err, ErrNotExist) {
			httpError(w, err)
		} else {
			// The stream cannot open now (a capture that is off).
			http.Error(w, err.Error(), http.StatusConflict)
		}
		return
	}
	defer rc.Close()
	// A client that goes while the stream is quiet ends the wait.
	stop := context.AfterFunc(r.Context(), func() { rc.Close() })
	defer stop()
	rw := http.NewResponseController(w)
	rw.Flush() // the answer's headers now: the first frame may be long in coming
	buf := make([]byte, 64<<10)
	for {
		k, err := rc.Read(buf)
		if k > 0 {
			rw.SetWriteDeadline(time.Now().Add(streamWrite))
			if _, werr := w.Write(buf[:k]); werr != nil {
				return
			}
			rw.Flush()
		}
		if err != nil {
			return // the stream ended, or the client went
		}
	}
}

func httpError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, ErrNotExist) || errors.Is(err, ErrNotDir):
		code = http.StatusNotFound
	case errors.Is(err, ErrPermission):
		code = http.StatusForbidden
	}
	http.Error(w, err.Error(), code)
}
