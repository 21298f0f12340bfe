//go:build unix

package headerhelper

import (
	"context"
	"os/exec"
	"syscall"
)

// shellCommand runs line with sh -c, as Claude Code runs headersHelper.
func shellCommand(ctx context.Context, line string) *exec.Cmd {
	return exec.CommandContext(ctx, "/bin/sh", "-c", line)
}

// inGroup puts the helper in a process group of its own, which ctx's end
// kills whole: a shell's child (the script, the CLI it calls) goes too.
func inGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		killGroup(cmd)
		return nil
	}
}

// killGroup kills what is left of the helper's group.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil && cmd.Process.Pid > 1 {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
