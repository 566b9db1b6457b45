// Command init is the default program of the ether9 image: the status
// server. It is a program like any other (package ether9): the machine
// comes up from the kernel command line and the supervisor restarts the
// server should it fail; it serves the status page, the bulk-data
// endpoints the self-test measures with, and the namespace under /ns/ on
// the HTTP port (ether9.http=, 80 by default).
package main

import (
	"context"
	"fmt"

	"github.com/ether9/ether9"
)

func main() { ether9.Config{Name: "http"}.Main(serve) }

func serve(ctx context.Context, m *ether9.Machine) error {
	port := m.System().Options().HTTPPort
	ln, err := m.Listen("tcp", fmt.Sprintf(":%d", port))
	if err != nil {
		return err
	}
	return m.System().ServeStatus(ctx, ln)
}
