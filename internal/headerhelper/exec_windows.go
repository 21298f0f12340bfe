//go:build windows

package headerhelper

import (
	"context"
	"os"
	"os/exec"
	"syscall"
)

// shellCommand runs line with cmd.exe /C, the Windows shell.
func shellCommand(ctx context.Context, line string) *exec.Cmd {
	shell := os.Getenv("ComSpec")
	if shell == "" {
		shell = "cmd.exe"
	}
	cmd := exec.CommandContext(ctx, shell)
	// cmd.exe parses its own command line: pass it as written.
	cmd.SysProcAttr = &syscall.SysProcAttr{CmdLine: `/d /s /c "` + line + `"`}
	return cmd
}

// inGroup kills the helper when ctx ends (its children are left to the
// job of the process that started the sidecar).
func inGroup(cmd *exec.Cmd) {}

func killGroup(cmd *exec.Cmd) {}
