//go:build !unix && !windows

package headerhelper

import (
	"context"
	"os/exec"
)

func shellCommand(ctx context.Context, line string) *exec.Cmd {
	return exec.CommandContext(ctx, "/bin/sh", "-c", line)
}

func inGroup(cmd *exec.Cmd) {}

func killGroup(cmd *exec.Cmd) {}
