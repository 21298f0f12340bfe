//go:build unix

package mcpclient

import (
	"errors"

	"os/exec"
	"syscall"
)

// setProcessGroup puts the child in a process group of its own, so that
// closing the connection can signal the server and everything it started
// (npx, sh -c, node workers) at once.
func setProcessGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	setDeathSignal(cmd.SysProcAttr)
}

// signalGroup sends sig to the process group led by pid (the child is its
// group's leader: Setpgid with Pgid 0).
func signalGroup(pid int, sig syscall.Signal) error {
	err := syscall.Kill(-pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// groupAlive reports whether any process of the group still exists.
// Zombies count as alive until their parent reaps them; callers bound their
// wait.
func groupAlive(pid int) bool {
	return syscall.Kill(-pid, 0) == nil
}

func terminateGroup(pid int) error { return signalGroup(pid, syscall.SIGTERM) }
func killGroup(pid int) error      { return signalGroup(pid, syscall.SIGKILL) }
