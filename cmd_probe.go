package main

import (
	"io"

	"github.com/mcp-sidecar/mcp-sidecar/internal/peoplecli"
)

func probeLauncherCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return peopleCommand(peoplecli.ProbeLauncher, args, stdin, stdout, stderr)
}
