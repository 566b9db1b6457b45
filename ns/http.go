package ns

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Handler serves the tree read-only over HTTP under prefix ("/ns"): a
// file's content, or a directory's names one per line (directories end
// in "/"), as text.
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

func httpError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	if errors.Is(err, ErrNotExist) || errors.Is(err, ErrNotDir) {
		code = http.StatusNotFound
	}
	http.Error(w, err.Error(), code)
}
