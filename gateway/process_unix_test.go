//go:build unix

package gateway_test

import "syscall"

// alive reports whether a process of this id exists (and is not a zombie
// we could signal: the sidecar reaps its children).
func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }
