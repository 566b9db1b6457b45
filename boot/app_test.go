package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ether9/ether9/boot/image"
)

// boxMain is a program of a module of its own.
const boxMain = `package main

import (
	"context"
	"fmt"
	"net/http"

	"github.com/ether9/ether9"
)

func main() { ether9.Config{Name: "box"}.Main(serve) }

func serve(ctx context.Context, m *ether9.Machine) error {
	ln, err := m.Listen("tcp", ":80")
	if err != nil {
		return err
	}
	m.Logf("listening")
	return http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "hello from a module of its own")
	}))
}
`

// newModule makes a module outside the tree that requires this checkout,
// as the README's five lines do, with main.go holding src.
func newModule(t *testing.T, src string) string {
	t.Helper()
	root, err := image.ModuleRoot(context.Background(), ".")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"mod", "init", "example.com/box"},
		{"mod", "edit", "-require", "github.com/ether9/ether9@v0.0.0", "-replace", "github.com/ether9/ether9=" + root},
		{"mod", "tidy"},
	} {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	return dir
}

// A program in a module of its own, outside the tree, builds with -app
// and serves on the simulated machine.
func TestAppFromOwnModule(t *testing.T) {
	dir := newModule(t, boxMain)
	o := testOptions("igc", dir)
	o.machine = "sim"
	var err error
	if o.port, err = freePort(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var log syncBuffer
	m, con, err := simulate(ctx, o, &log, &log)
	if err != nil {
		t.Fatal(err)
	}
	defer m.stop(10*time.Second, &log)
	if _, err := con.WaitFor(ctx, "box: listening"); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	body := get(t, ctx, fmt.Sprintf("http://127.0.0.1:%d/", o.port))
	if !strings.Contains(body, "hello from a module of its own") {
		t.Fatalf("GET / = %q\n%s", body, log.String())
	}
}

// A program that does not compile says why, and nothing starts.
func TestAppThatDoesNotBuild(t *testing.T) {
	dir := newModule(t, strings.Replace(boxMain, "m.Logf(\"listening\")", "m.Logf(nope)", 1))
	o := testOptions("e1000e", dir)
	o.machine = "sim"
	var log syncBuffer
	m, _, err := simulate(context.Background(), o, &log, &log)
	if m != nil {
		m.stop(time.Second, &log)
		t.Fatal("a machine started")
	}
	if err == nil || !strings.Contains(err.Error(), "undefined: nope") || !strings.Contains(err.Error(), "-app") {
		t.Fatalf("err = %v, want the compiler's words", err)
	}
	if _, _, err := simulate(context.Background(), testOptions("e1000e", "./boot/init/status"), &log, &log); err == nil || !strings.Contains(err.Error(), "not a command") {
		t.Fatalf("a library package as -app: %v", err)
	}
}

// get fetches url through a forward, retrying while the guest's side is
// not listening yet (the forward accepts and drops the connection).
func get(t *testing.T, ctx context.Context, url string) string {
	t.Helper()
	var last error
	for ctx.Err() == nil {
		resp, err := http.Get(url)
		if err == nil {
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err == nil && resp.StatusCode == http.StatusOK {
				return string(b)
			}
			last = fmt.Errorf("%s: %v", resp.Status, err)
		} else {
			last = err
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("GET %s: %v", url, last)
	return ""
}

// TestBootHelloExample boots examples/hello in QEMU as /init: the public
// package on the Linux platform, the NIC from PCI through VT-d to gVisor,
// DHCP from QEMU's user network, the program's HTTP answer through the
// forward.
func TestBootHelloExample(t *testing.T) {
	needMachine(t, "e1000e")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var log syncBuffer
	o := testOptions("e1000e", "./examples/hello")
	o.port = 0
	vm, c := startVM(t, ctx, o, &log)
	for _, want := range []string{"iommu: translation on", "hello: listening"} {
		if _, err := vm.Console.WaitFor(ctx, want); err != nil {
			t.Fatalf("%v\nconsole:\n%s", err, vm.Console.Tail(60))
		}
	}
	body := get(t, ctx, fmt.Sprintf("http://127.0.0.1:%d/", c.Forward[0].Host))
	if !strings.Contains(body, "hello from ether9") {
		t.Fatalf("GET / = %q", body)
	}
	if body := get(t, ctx, fmt.Sprintf("http://127.0.0.1:%d/status/ns/hello/requests", c.Forward[0].Host)); body != "1\n" {
		t.Errorf("/hello/requests over HTTP = %q", body)
	}
}
