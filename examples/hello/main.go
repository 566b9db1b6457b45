// Command hello is the smallest ether9 appliance: an HTTP server on port
// 80 that answers GET / with a greeting, serves the machine's status page
// under /status/, and counts its requests in the namespace at
// /hello/requests (cat it on the console shell, or over 9P).
//
//	go run ./boot -app ./examples/hello
package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/ether9/ether9"
	"github.com/ether9/ether9/ns"
)

func main() { ether9.Config{Name: "hello"}.Main(serve) }

func serve(ctx context.Context, m *ether9.Machine) error {
	var requests atomic.Uint64
	if err := m.Bind("/hello/requests", ns.Text(func() string { return fmt.Sprintf("%d\n", requests.Load()) })); err != nil {
		return err
	}
	ln, err := m.Listen("tcp", ":80")
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		n := requests.Add(1)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintf(w, "hello from ether9: request %d, to %s over %s\n", n, r.Host, m.System().Ports()[0].NIC.Name())
	})
	mux.Handle("/status/", http.StripPrefix("/status", m.Status()))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	stop := context.AfterFunc(ctx, func() { srv.Close() })
	defer stop()
	m.Log().Info("listening", "addr", ln.Addr().String())
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
