package main

import (
	"context"
	"fmt"
	"io"
)

// runSim runs /init's code on the simulated machine as a host process.
func runSim(ctx context.Context, o options, stdout, stderr io.Writer) error {
	return fmt.Errorf("-machine sim: %w", errNoSim)
}
