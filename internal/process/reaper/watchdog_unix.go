//go:build unix

package reaper

import (
	"os/exec"
	"syscall"
)

const watchdogSupported = true

// setWatchdogAttrs puts the watchdog in a process group of its own, so
// that a signal to the sidecar's group (a terminal's Ctrl-C, a host that
// kills the group) does not take the watchdog with it. It gets no
// parent-death signal: outliving the sidecar is its job.
func setWatchdogAttrs(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

func killGroup(pgid int) {
	syscall.Kill(-pgid, syscall.SIGKILL)
}
