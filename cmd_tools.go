package main

import (
	"io"

	"github.com/mcp-sidecar/mcp-sidecar/internal/peoplecli"
)

func toolsCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return peopleCommand(peoplecli.Tools, args, stdin, stdout, stderr)
}
