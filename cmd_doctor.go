package main

import (
	"io"

	"github.com/mcp-sidecar/mcp-sidecar/internal/peoplecli"
)

func doctorCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return peopleCommand(peoplecli.Doctor, args, stdin, stdout, stderr)
}
