//go:build linux

// Command linuxref is the reference boot's /init: the same Debian kernel
// ether9 boots on, but with Linux's own NIC driver (e1000e or igb, loaded
// from the initramfs with its dependencies) and Linux's TCP/IP stack,
// serving the endpoints the self-test measures (GET /source, POST /sink,
// GET /debug/ping, with the same token), so that ether9 is measured
// against Linux in the same QEMU with the same workload
// (go run ./boot -selftest -driver both).
package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/ether9/ether9/boot/init/status"
	"github.com/ether9/ether9/kernel/linux"
	"github.com/ether9/ether9/ns/admin"
)

// Deadlines of the bring-up: a NIC that does not appear or get a link in
// this long will not.
const (
	nicWait  = 20 * time.Second
	linkWait = 20 * time.Second
)

func main() {
	if os.Getpid() == 1 {
		if err := linux.Mount(); err != nil {
			logf("mount: %v", err) // hugetlbfs may be missing; the rest is what counts
		}
		if _, _, err := linux.Console(); err != nil {
			logf("console: %v", err)
		}
	}
	if err := run(); err != nil {
		logf("FAIL: %v", err)
	}
	// PID 1 must not exit (the kernel would panic): power off, so that
	// QEMU ends and the runner sees the console's last lines at once.
	if os.Getpid() == 1 {
		if err := linux.PowerOff(); err != nil {
			logf("%v", err)
		}
		for {
			time.Sleep(time.Hour)
		}
	}
	os.Exit(1)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stdout, "ref: "+format+"\n", args...)
}

func run() error {
	line, err := linux.Cmdline()
	if err != nil {
		return err
	}
	c, err := parseCmdline(line)
	if err != nil {
		return err
	}
	if !c.token.Valid() {
		if c.token, err = admin.NewToken(); err != nil {
			return err
		}
		logf("admin: token %s", c.token)
	}
	for _, m := range c.modules {
		t := time.Now()
		if err := linux.LoadModule(filepath.Join("/lib/modules", m+".ko")); err != nil {
			return err
		}
		logf("module %s loaded (%.0f ms)", m, ms(time.Since(t)))
	}
	nic, err := waitNIC(nicWait)
	if err != nil {
		return err
	}
	if err := configure(nic, c); err != nil {
		return err
	}
	fs := sysfs{root: "/", nic: nic}
	logf("%s: driver %s, iommu %s, %v via %v", nic, fs.driver(), fs.iommuMode(), c.addr, c.gw)
	return serve(fs, c)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// waitNIC returns the first network interface with a device behind it
// (not lo), once the driver has registered one.
func waitNIC(wait time.Duration) (string, error) {
	end := time.Now().Add(wait)
	for {
		ents, _ := os.ReadDir("/sys/class/net")
		for _, e := range ents {
			if _, err := os.Stat(filepath.Join("/sys/class/net", e.Name(), "device")); err == nil {
				return e.Name(), nil
			}
		}
		if time.Now().After(end) {
			return "", fmt.Errorf("no network interface with a device after %v (interfaces: %d)", wait, len(ents))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// configure brings lo and nic up over netlink, gives nic its address and
// the default route, and waits for the link.
func configure(nic string, c config) error {
	if lo, err := netlink.LinkByName("lo"); err == nil {
		netlink.LinkSetUp(lo)
	}
	l, err := netlink.LinkByName(nic)
	if err != nil {
		return fmt.Errorf("%s: %w", nic, err)
	}
	addr := &netlink.Addr{IPNet: &net.IPNet{IP: c.addr.Addr().AsSlice(), Mask: net.CIDRMask(c.addr.Bits(), 32)}}
	if err := netlink.AddrAdd(l, addr); err != nil {
		return fmt.Errorf("%s: address %v: %w", nic, c.addr, err)
	}
	if err := netlink.LinkSetUp(l); err != nil {
		return fmt.Errorf("%s: up: %w", nic, err)
	}
	if err := netlink.RouteAdd(&netlink.Route{LinkIndex: l.Attrs().Index, Gw: c.gw.AsSlice()}); err != nil {
		return fmt.Errorf("%s: default route via %v: %w", nic, c.gw, err)
	}
	t := time.Now()
	for {
		b, _ := os.ReadFile(filepath.Join("/sys/class/net", nic, "carrier"))
		if strings.TrimSpace(string(b)) == "1" {
			logf("%s: link up (%.0f ms)", nic, ms(time.Since(t)))
			return nil
		}
		if time.Since(t) > linkWait {
			return fmt.Errorf("%s: no link after %v", nic, linkWait)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The status server's limits (boot/init/system), so that both sides of
// the comparison serve alike.
const (
	httpHeaderTime = 5 * time.Second
	httpBodyTime   = 2 * time.Minute
	httpIdle       = time.Minute
	httpHeaderSize = 16 << 10
)

// handler serves the status page to anyone and, with the token as the
// status server wants it, /source, /sink and /debug/ping.
func handler(fs sysfs, c config) http.Handler {
	guard := admin.NewGuard(c.token, logf)
	bulk := http.NewServeMux()
	bulk.HandleFunc("GET /source", status.Source)
	bulk.HandleFunc("POST /sink", status.Sink)
	bulk.HandleFunc("GET /debug/ping", func(w http.ResponseWriter, r *http.Request) { servePing(w, r, c.gw) })
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		fs.writePage(w)
	})
	for _, p := range []string{"/source", "/sink", "/debug/"} {
		mux.Handle(p, guard.Protect(bulk))
	}
	return guard.SameOrigin(mux)
}

func serve(fs sysfs, c config) error {
	ln, err := net.Listen("tcp", ":80")
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           handler(fs, c),
		ReadHeaderTimeout: httpHeaderTime,
		ReadTimeout:       httpBodyTime,
		WriteTimeout:      httpBodyTime,
		IdleTimeout:       httpIdle,
		MaxHeaderBytes:    httpHeaderSize,
	}
	logf("http: listening :80")
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// servePing answers GET /debug/ping?n=N&gap=D as the status server does.
func servePing(w http.ResponseWriter, r *http.Request, gw netip.Addr) {
	n, gap, err := status.PingQuery(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	st, err := pingSeries(r.Context(), gw, n, gap, status.PingTimeout)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	fmt.Fprintf(w, "ping %v %v\n", gw, st)
}
