//go:build unix

package proctree

import (
	"errors"
	"syscall"
)

// Signal is a signal to send (SIGTERM, SIGKILL).
type Signal = syscall.Signal

// The signals a teardown sends.
const (
	Terminate Signal = syscall.SIGTERM
	Kill      Signal = syscall.SIGKILL
)

func signalGroup(pgid int, sig Signal) {
	if pgid > 1 {
		syscall.Kill(-pgid, sig)
	}
}

func signalProcess(pid int, sig Signal) {
	if pid > 1 {
		syscall.Kill(pid, sig)
	}
}

// groupAlive reports whether any process of group pgid exists (zombies
// included: only the table tells them apart).
func groupAlive(pgid int) bool {
	err := syscall.Kill(-pgid, 0)
	return err == nil || !errors.Is(err, syscall.ESRCH)
}
