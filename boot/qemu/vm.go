package qemu

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// VM is a running QEMU.
type VM struct {
	Console *Console
	// Input types on the serial console (QEMU's standard input).
	Input io.WriteCloser
	Start time.Time // when QEMU was started

	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// Interactive boots c with the serial console on this terminal (QEMU's
// -nographic: Ctrl-A x quits) and returns when QEMU exits.
func Interactive(ctx context.Context, c Config) error {
	args, err := c.Args()
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, c.binary(), args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w", c.binary(), err)
	}
	return nil
}

func (c Config) binary() string {
	if c.Binary != "" {
		return c.Binary
	}
	return Binary
}

// Start boots c with its console collected, copied to echo (nil:
// nowhere), and typed on through VM.Input. Stop it with Stop.
func Start(c Config, echo io.Writer) (*VM, error) {
	args, err := c.Args()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(c.binary(), args...)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("qemu: %w", err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("qemu: %w", err)
	}
	cmd.Stderr = cmd.Stdout
	// Its own process group: a ^C on the terminal reaches us, and we stop
	// QEMU ourselves. If we die first (a test binary killed at its
	// timeout), the kernel stops it for us.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	vm := &VM{cmd: cmd, done: make(chan struct{}), Input: in}
	vm.Start = time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("qemu: starting %s: %w", c.binary(), err)
	}
	vm.Console = NewConsole(vm.Start, echo)
	pid := cmd.Process.Pid
	vm.Console.cpu = func() (time.Duration, error) { return threadsCPU(pid) }
	go vm.Console.Read(out, func() error {
		vm.err = cmd.Wait()
		close(vm.done)
		if vm.err != nil {
			return fmt.Errorf("qemu exited: %w", vm.err)
		}
		return fmt.Errorf("qemu exited")
	})
	return vm, nil
}

// Done is closed when QEMU has exited.
func (vm *VM) Done() <-chan struct{} { return vm.done }

// Wait waits for QEMU to exit by itself (the guest powered off) or for ctx.
func (vm *VM) Wait(ctx context.Context) error {
	select {
	case <-vm.done:
		return vm.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stop ends QEMU: SIGTERM, then SIGKILL after a grace period.
func (vm *VM) Stop() {
	select {
	case <-vm.done:
		return
	default:
	}
	vm.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-vm.done:
	case <-time.After(3 * time.Second):
		vm.cmd.Process.Kill()
		<-vm.done
	}
}
