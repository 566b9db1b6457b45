package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"strconv"
	"syscall"
	"time"

	"github.com/ether9/ether9/boot/qemu"
)

// The guest's xdp mode finds the two hub NICs by these addresses
// (boot/init/xdp.go): the pusher, then the NIC under test.
var xdpHubMACs = []string{"02:00:00:00:00:0a", "02:00:00:00:00:0b"}

var (
	xdpTests = []string{"rxdrop", "txpush", "l2fwd"}
	xdpPaths = []string{"netstack", "copy", "zero-copy"}
	xdpCell  = regexp.MustCompile(`xdp: (rxdrop|txpush|l2fwd) (\d+) (netstack|copy|zero-copy) ([0-9.]+) kpps`)
	xdpRatio = regexp.MustCompile(`xdp: ratio ([0-9.]+)`)
)

// xdpTable is what the guest printed: kpps by "test size path".
type xdpTable struct {
	cells map[string]float64
	size  int
	ratio float64
}

func (t *xdpTable) print(w io.Writer) {
	fmt.Fprintf(w, "xdp in QEMU (two igb on a hub, TCG), Kpps\n%d B     ", t.size)
	for _, p := range xdpPaths {
		fmt.Fprintf(w, " %10s", p)
	}
	fmt.Fprintln(w)
	for _, tt := range xdpTests {
		fmt.Fprintf(w, "%-8s", tt)
		for _, p := range xdpPaths {
			fmt.Fprintf(w, " %10.1f", t.cells[fmt.Sprintf("%s %d %s", tt, t.size, p)])
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "ratio: %.2f\n", t.ratio)
}

// parseXDP reads the cells and the ratio from console lines; every test
// and path must be there.
func parseXDP(lines []string) (*xdpTable, error) {
	t := &xdpTable{cells: map[string]float64{}}
	seenRatio := false
	for _, l := range lines {
		if m := xdpCell.FindStringSubmatch(l); m != nil {
			size, _ := strconv.Atoi(m[2])
			k, err := strconv.ParseFloat(m[4], 64)
			if err != nil {
				return nil, fmt.Errorf("xdp: line %q: %w", l, err)
			}
			t.size = size
			t.cells[m[1]+" "+m[2]+" "+m[3]] = k
		}
		if m := xdpRatio.FindStringSubmatch(l); m != nil {
			r, err := strconv.ParseFloat(m[1], 64)
			if err != nil {
				return nil, fmt.Errorf("xdp: line %q: %w", l, err)
			}
			t.ratio, seenRatio = r, true
		}
	}
	var errs []error
	for _, tt := range xdpTests {
		for _, p := range xdpPaths {
			if _, ok := t.cells[fmt.Sprintf("%s %d %s", tt, t.size, p)]; !ok {
				errs = append(errs, fmt.Errorf("xdp: no %s %s cell", tt, p))
			}
		}
	}
	if !seenRatio {
		errs = append(errs, errors.New("xdp: no ratio line"))
	}
	return t, errors.Join(errs...)
}

// xdpBoot boots the image with two more igb NICs joined by a hub and
// ether9.xdp=quick, and collects the table /init prints before it powers
// off.
func xdpBoot(ctx context.Context, o options, console io.Writer) (*xdpTable, error) {
	if err := checkNIC(o); err != nil {
		return nil, err
	}
	if _, err := qemu.Check(qemu.Binary, qemu.NIC{Name: "igb", Device: "igb", MinVer: 8}); err != nil {
		return nil, err
	}
	if !o.portSet || o.port == 0 {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		o.port = p
	}
	p, err := assemble(ctx, o, console, "ether9.xdp=quick")
	if err != nil {
		return nil, err
	}
	defer p.remove()
	c, err := qemuConfig(o, p)
	if err != nil {
		return nil, err
	}
	args, err := c.Args()
	if err != nil {
		return nil, err
	}
	// Each 82576 places its virtual functions 16 and 17 slots above its
	// own; fixed slots two apart keep them from colliding.
	for i, mac := range xdpHubMACs {
		id := fmt.Sprintf("hub%d", i)
		args = append(args, "-netdev", "hubport,hubid=0,id="+id,
			"-device", fmt.Sprintf("igb,netdev=%s,romfile=,mac=%s,addr=%#x", id, mac, 6+2*i))
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	cmd := exec.Command(c.Binary, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("qemu: %w", err)
	}
	cmd.Stderr = cmd.Stdout
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("qemu: starting %s: %w", c.Binary, err)
	}
	con := qemu.NewConsole(start, console)
	done := make(chan error, 1)
	go con.Read(out, func() error {
		err := cmd.Wait()
		done <- err
		if err != nil {
			return fmt.Errorf("qemu exited: %w", err)
		}
		return errors.New("qemu exited")
	})
	defer func() {
		select {
		case <-done:
		default:
			cmd.Process.Kill()
			<-done
		}
	}()
	fail := func(s string) bool { return qemu.Panicked(s) || xdpFailed.MatchString(s) }
	if _, _, err := con.Wait(ctx, 0, xdpRatio.MatchString, fail); err != nil {
		return nil, fmt.Errorf("%w\nconsole tail:\n%s", err, con.Tail(20))
	}
	var lines []string
	for _, l := range con.Lines() {
		lines = append(lines, l.Text)
	}
	return parseXDP(lines)
}

var xdpFailed = regexp.MustCompile(`xdp: FAIL`)
