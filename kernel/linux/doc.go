//go:build linux

// Package linux is the Linux-hosted platform: ether9 runs as PID 1 of an
// initramfs and Linux is only its boot loader, scheduler and memory shim.
// The package brings the process up (mounts, console, port I/O), maps
// device register windows from sysfs and /dev/mem, and provides pinned DMA
// memory whose physical addresses come from /proc/self/pagemap.
package linux
