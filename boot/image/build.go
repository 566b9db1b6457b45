package image

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// InitPackage is the import path of the /init program.
const InitPackage = "./boot/init"

// ModuleRoot returns the directory of the main module's go.mod, found
// with `go env GOMOD` from dir.
func ModuleRoot(ctx context.Context, dir string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "env", "GOMOD")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("%s is not inside the ether9 module", dir)
	}
	return filepath.Dir(mod), nil
}

// Build compiles pkg (relative to the module root) for linux/amd64 as a
// static binary at out. The same binary runs as PID 1 in the image and,
// for the simulated machine, as an ordinary host process.
func Build(ctx context.Context, root, pkg, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, strings.TrimSpace(stderr.String()))
	}
	return nil
}
