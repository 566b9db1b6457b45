package main

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hugelgupf/p9/linux"

	"github.com/ether9/ether9/boot/qemu"
	"github.com/ether9/ether9/ns/ninep"
)

// bootNS boots ./boot/init with the 9P port forwarded and waits for the
// shell and the 9P server; it returns the forwarded 9P and HTTP ports.
func bootNS(t *testing.T, ctx context.Context, log io.Writer, extra ...string) (vm *qemu.VM, ninePort, httpPort int) {
	t.Helper()
	o := testOptions("e1000e", "./boot/init")
	var err error
	if o.port, err = freePort(); err != nil {
		t.Fatal(err)
	}
	if o.ninePort, err = freePort(); err != nil {
		t.Fatal(err)
	}
	p, err := assemble(ctx, o, log, extra...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.remove)
	c, err := qemuConfig(o, p)
	if err != nil {
		t.Fatal(err)
	}
	vm, err = qemu.Start(c, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(vm.Stop)
	for _, want := range []string{"9p: listening :564", "shell: on the console"} {
		if _, err := vm.Console.WaitFor(ctx, want); err != nil {
			t.Fatalf("%v\nconsole:\n%s", err, vm.Console.Tail(60))
		}
	}
	return vm, o.ninePort, o.port
}

// dial9P connects to the forwarded 9P port; QEMU accepts on the host at
// once, so a failed attach is retried until the guest answers.
func dial9P(t *testing.T, ctx context.Context, port int, token string) *ninep.Client {
	t.Helper()
	var last error
	for ctx.Err() == nil {
		conn, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), 5*time.Second)
		if err == nil {
			conn.SetDeadline(time.Now().Add(30 * time.Second))
			c, err := ninep.DialToken(conn, token)
			if err == nil {
				conn.SetDeadline(time.Time{})
				t.Cleanup(func() { c.Close() })
				return c
			}
			conn.Close()
		}
		last = err
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("9p through the forward: %v", last)
	return nil
}

// TestConsoleShellAnd9P drives the console shell through the serial port
// and the namespace through the 9P forward, with 9P read-only and then
// read-write.
func TestConsoleShellAnd9P(t *testing.T) {
	needMachine(t, "e1000e")
	if !isMain(t, "./boot/init") {
		t.Skip("skipping: ./boot/init is not a command yet")
	}
	for _, rw := range []bool{false, true} {
		const token = "ns-test-token-0123456789"
		name, extra := "ro", []string{"ether9.token=" + token}
		if rw {
			name, extra = "rw", []string{"ether9.9p=rw", "ether9.token=" + token}
		}
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			var log syncBuffer
			vm, port, _ := bootNS(t, ctx, &log, extra...)

			from := len(vm.Console.Lines())
			if _, err := io.WriteString(vm.Input, "cat /net/ether0/stats\r"); err != nil {
				t.Fatal(err)
			}
			if _, _, err := vm.Console.Wait(ctx, from, func(s string) bool { return strings.Contains(s, "rx_frames: ") }, qemu.Panicked); err != nil {
				t.Fatalf("shell did not answer cat: %v\nconsole:\n%s", err, vm.Console.Tail(40))
			}

			// Without the token every write is refused, and counted.
			anon := dial9P(t, ctx, port, "")
			if err := anon.Write("/dev/iommu/ctl", "deferred\n"); !errors.Is(err, linux.EROFS) {
				t.Fatalf("write without the token: %v, want EROFS", err)
			}
			c := anon
			if rw {
				c = dial9P(t, ctx, port, token)
			}
			stats, err := c.Read("/dev/iommu/stats")
			if err != nil || !strings.Contains(stats, "mode strict\n") || !strings.Contains(stats, "maps ") {
				t.Fatalf("/dev/iommu/stats over 9P: %q, %v", stats, err)
			}
			err = c.Write("/dev/iommu/ctl", "deferred\n")
			mode, rerr := c.Read("/dev/iommu/stats")
			if rerr != nil {
				t.Fatal(rerr)
			}
			if rw {
				if err != nil || !strings.Contains(mode, "mode deferred\n") {
					t.Fatalf("rw: write deferred: %v; stats now:\n%s", err, mode)
				}
			} else if !errors.Is(err, linux.EROFS) || !strings.Contains(mode, "mode strict\n") {
				t.Fatalf("ro: write deferred: %v (want EROFS); stats now:\n%s", err, mode)
			}
			// Linux's own counters, as the metal platform serves the shim's.
			if ks, err := c.Read("/dev/kstat"); err != nil || !strings.Contains(ks, "\nidle_ns ") || !strings.HasPrefix(ks, "interrupts ") {
				t.Errorf("/dev/kstat over 9P: %q, %v", ks, err)
			}
			refused, err := c.Read("/dev/admin/refused")
			want := "no_token 1\n"
			if !rw {
				want = "read_only 2\n" // the anonymous write and the ro one: the same client
			}
			if err != nil || !strings.Contains(refused, want) {
				t.Fatalf("/dev/admin/refused: %q, %v; want %q", refused, err, want)
			}
		})
	}
}
