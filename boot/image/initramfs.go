// Package image builds what a machine boots: the /init program, the
// initramfs that carries it, the kernel command line, and a kernel in the
// form QEMU boots fastest (vmlinux through its PVH entry).
package image

import (
	"bufio"
	"fmt"
	"io"

	"github.com/u-root/u-root/pkg/cpio"
)

// rootDirs are the mount points /init needs before it can mount anything:
// it mounts proc, sysfs and devtmpfs itself (Debian kernels do not mount
// devtmpfs on their own), and tmp is its scratch space.
var rootDirs = []string{"dev", "proc", "sys", "tmp"}

// WriteInitramfs writes a newc cpio archive holding init as /init, the
// root directories and /dev/console, so that the kernel can give /init its
// standard streams before devtmpfs is mounted, and files.
func WriteInitramfs(w io.Writer, init []byte, files ...File) error {
	if len(init) == 0 {
		return fmt.Errorf("initramfs: /init is empty")
	}
	bw := bufio.NewWriter(w)
	rw := cpio.Newc.Writer(bw)
	recs := make([]cpio.Record, 0, len(rootDirs)+3+len(files))
	for _, d := range rootDirs {
		recs = append(recs, cpio.Directory(d, 0o755))
	}
	recs = append(recs,
		cpio.CharDev("dev/console", 0o600, 5, 1),
		cpio.StaticFile("init", string(init), 0o755),
	)
	for _, f := range files {
		recs = append(recs, cpio.StaticFile(f.Name, string(f.Data), 0o644))
	}
	cpio.MakeAllReproducible(recs)
	if err := cpio.WriteRecordsAndDirs(rw, recs); err != nil {
		return fmt.Errorf("initramfs: %w", err)
	}
	if err := cpio.WriteTrailer(rw); err != nil {
		return fmt.Errorf("initramfs: trailer: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("initramfs: %w", err)
	}
	return nil
}
