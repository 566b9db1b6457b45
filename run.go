package ether9

import (
	"context"
	"fmt"

	"github.com/ether9/ether9/boot/init/simmachine"
	"github.com/ether9/ether9/boot/init/system"
)

// options applies the program's words, then the machine's, over base,
// reporting what it cannot use: a typo must not stop the machine.
func (c Config) options(base system.Options, cmdline string, logf func(string, ...any)) system.Options {
	opt, err := base.With(c.Cmdline)
	if err != nil {
		logf("%s: Config.Cmdline: %v", c.Name, err)
	}
	opt, err = opt.With(cmdline)
	if err != nil {
		logf("%v", err)
	}
	for _, u := range opt.Unknown {
		logf("cmdline: unknown parameter ether9.%s ignored", u)
	}
	return opt
}

// start runs p under the system's supervisor.
func (c Config) start(ctx context.Context, sys *system.System, p Program) {
	env := newEnv(sys, c.Name, Roots)
	sys.Go(ctx, c.Name, func(ctx context.Context) error {
		m := env.machine()
		defer m.closeAll()
		// A program blocked in Accept or ReadFrom learns of the end from
		// its listeners closing.
		stop := context.AfterFunc(ctx, m.closeAll)
		defer stop()
		err := p(ctx, m)
		if err == nil && ctx.Err() == nil {
			sys.Logf("%s: finished", c.Name)
		}
		if err != nil {
			err = fmt.Errorf("returned: %w", err)
		}
		return err
	})
}

// Simulate brings the system up on the simulated machine h, in this
// process, with simmachine's static addresses under the program's words,
// and starts p on it. It returns at once; p runs until h is closed. Tests
// of a program use it with h's peers as the machine's neighbours.
func (c Config) Simulate(h *simmachine.Host, p Program, logf func(format string, args ...any)) (*system.System, error) {
	c = c.withDefaults()
	if logf == nil {
		logf = func(string, ...any) {}
	}
	sys, err := h.Boot(c.options(simmachine.Options(len(h.Models)), "", logf), logf)
	if err != nil {
		return nil, err
	}
	c.start(h.Context(), sys, p)
	return sys, nil
}
