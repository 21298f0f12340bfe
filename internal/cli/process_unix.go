//go:build unix

package cli

import "syscall"

// processExists reports whether pid names a process (a zombie included).
func processExists(pid int) bool { return syscall.Kill(pid, 0) == nil }
