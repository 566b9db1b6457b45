package main

import (
	"context"
	"errors"
	"io"
)

// runSim runs /init's code on the simulated machine as a host process.
func runSim(ctx context.Context, o options, stdout, stderr io.Writer) error {
	return errors.New("-machine sim: the simulated machine's host side (boot/init/simhost) has not landed yet")
}
