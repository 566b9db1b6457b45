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
	xdpSizes = []int{64, 1500}
	xdpCell  = regexp.MustCompile(`xdp: (rxdrop|txpush|l2fwd) (\d+) (netstack|copy|zero-copy) ([0-9.]+) kpps frames (\d+) late (\d+)`)
	xdpRatio = regexp.MustCompile(`xdp: ratio ([0-9.]+)`)
)

// xdpResult is one cell: its rate, the frames it counted, and those of
// the second half of its run alone.
type xdpResult struct {
	kpps         float64
	frames, late uint64
}

// xdpTable is what the guest printed: cells by "test size path".
type xdpTable struct {
	cells map[string]xdpResult
	ratio float64
}

func xdpKey(test string, size int, path string) string {
	return fmt.Sprintf("%s %d %s", test, size, path)
}

func (t *xdpTable) print(w io.Writer) {
	// A blank line first: the console's last line may lack its newline.
	fmt.Fprintln(w, "\nxdp in QEMU (two igb on a hub, TCG), Kpps")
	for _, size := range xdpSizes {
		fmt.Fprintf(w, "%-8s", fmt.Sprintf("%d B", size))
		for _, p := range xdpPaths {
			fmt.Fprintf(w, " %10s", p)
		}
		fmt.Fprintln(w)
		for _, tt := range xdpTests {
			fmt.Fprintf(w, "%-8s", tt)
			for _, p := range xdpPaths {
				fmt.Fprintf(w, " %10.1f", t.cells[xdpKey(tt, size, p)].kpps)
			}
			fmt.Fprintln(w)
		}
	}
	fmt.Fprintf(w, "ratio: %.2f\n", t.ratio)
}

// parseXDP reads the cells and the ratio from console lines; every test,
// size and path must be there.
func parseXDP(lines []string) (*xdpTable, error) {
	t := &xdpTable{cells: map[string]xdpResult{}}
	seenRatio := false
	for _, l := range lines {
		if m := xdpCell.FindStringSubmatch(l); m != nil {
			size, err1 := strconv.Atoi(m[2])
			k, err2 := strconv.ParseFloat(m[4], 64)
			frames, err3 := strconv.ParseUint(m[5], 10, 64)
			late, err4 := strconv.ParseUint(m[6], 10, 64)
			if err := errors.Join(err1, err2, err3, err4); err != nil {
				return nil, fmt.Errorf("xdp: line %q: %w", l, err)
			}
			t.cells[xdpKey(m[1], size, m[3])] = xdpResult{kpps: k, frames: frames, late: late}
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
	for _, size := range xdpSizes {
		for _, tt := range xdpTests {
			for _, p := range xdpPaths {
				if _, ok := t.cells[xdpKey(tt, size, p)]; !ok {
					errs = append(errs, fmt.Errorf("xdp: no %s %d %s cell", tt, size, p))
				}
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
	if _, err := qemu.Check(qemu.Binary, qemu.NIC{Name: "igb", Device: "igb", MinVer: 8}); err != nil {
		return nil, err
	}
	if !o.portSet {
		o.port = 0 // a free one, not the default
	}
	o.app = xdpInit
	p, c, err := prepare(ctx, o, console, "ether9.xdp=quick")
	if err != nil {
		return nil, err
	}
	defer p.remove()
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
