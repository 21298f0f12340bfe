package main

import (
	"io"

	"github.com/mcp-sidecar/mcp-sidecar/internal/peoplecli"
)

func callCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return peopleCommand(peoplecli.Call, args, stdin, stdout, stderr)
}
