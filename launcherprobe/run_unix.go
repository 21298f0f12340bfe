//go:build unix

package launcherprobe

import (
	"fmt"
	"os/exec"
	"syscall"
)

// unsupportedReason is empty where the launcher can be verified.
const unsupportedReason = ""

// ownProcessGroup makes cmd the leader of a new process group and its
// cancellation kill the whole group: a launcher that is a script leaves no
// grandchildren behind.
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// signalled describes the signal that ended a probe, if one did.
func signalled(exitErr *exec.ExitError) (string, bool) {
	if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return fmt.Sprintf("killed by signal %s", ws.Signal()), true
	}
	return "", false
}
