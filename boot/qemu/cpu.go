package qemu

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// userHZ is the unit of /proc/PID/stat's CPU times: USER_HZ, 100 on
// every x86 Linux (the ABI fixes it, whatever the kernel's tick).
const userHZ = 100

// CPUTime is the processor time QEMU has used so far, user and system,
// all its threads together.
func (vm *VM) CPUTime() (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", vm.cmd.Process.Pid))
	if err != nil {
		return 0, fmt.Errorf("qemu cpu time: %w", err)
	}
	return parseStatCPU(b)
}

// parseStatCPU reads utime and stime (fields 14 and 15) from a
// /proc/PID/stat line. The command name (field 2) is in parentheses and
// may hold spaces and parentheses itself, so fields count from the last
// closing one.
func parseStatCPU(b []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("qemu cpu time: no command name in %q", b)
	}
	f := bytes.Fields(b[i+1:])
	// After the name: state (3), ppid, pgrp, session, tty_nr, tpgid,
	// flags, minflt, cminflt, majflt, cmajflt, utime (14), stime (15).
	if len(f) < 13 {
		return 0, fmt.Errorf("qemu cpu time: %d fields after the name in %q", len(f), b)
	}
	var ticks uint64
	for _, s := range f[11:13] {
		v, err := strconv.ParseUint(string(s), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("qemu cpu time: %w", err)
		}
		ticks += v
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}

// threadsCPU is QEMU's processor time so far to the nanosecond: the sum
// of the first field (time on a CPU, ns) of each thread's
// /proc/PID/task/TID/schedstat. /proc/PID/stat counts in 10 ms ticks,
// too coarse for the stages of a boot.
func threadsCPU(pid int) (time.Duration, error) {
	files, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(files) == 0 {
		return 0, fmt.Errorf("qemu cpu time: no schedstat for pid %d", pid)
	}
	var ns uint64
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // a thread that just ended
		}
		fs := bytes.Fields(b)
		if len(fs) == 0 {
			continue
		}
		v, err := strconv.ParseUint(string(fs[0]), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("qemu cpu time: %s: %w", f, err)
		}
		ns += v
	}
	return time.Duration(ns), nil
}
