//go:build unix

package sidecar

import (
	"syscall"
	"time"
)

// processCPU is the CPU time the process has used (user and system, all
// threads), or 0 where it cannot be read. Benchmarks on a shared machine
// report it beside wall-clock time, which other processes' load inflates.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
