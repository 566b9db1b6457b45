// Command hello is the smallest /init: it proves the runner's image boots
// (initramfs, command line, console, power-off) without the real /init.
package main

import (
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

func main() {
	if err := unix.Mount("proc", "/proc", "proc", 0, ""); err != nil {
		fmt.Println("hello: mount proc:", err)
	}
	cmdline, err := os.ReadFile("/proc/cmdline")
	if err != nil {
		fmt.Println("hello: cmdline:", err)
	}
	fmt.Printf("hello: pid %d cmdline %s\n", os.Getpid(), strings.TrimSpace(string(cmdline)))
	if err := unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF); err != nil {
		fmt.Println("hello: power off:", err)
	}
	select {}
}
