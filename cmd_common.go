package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/mcp-sidecar/mcp-sidecar/internal/peoplecli"
)

// peopleCommand runs one of the commands for people (doctor, tools, call,
// probe-launcher) with this process's environment; an interrupt stops it
// and every server it started.
func peopleCommand(cmd func(context.Context, peoplecli.Env, []string) int, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	home, _ := os.UserHomeDir()
	cwd, _ := os.Getwd()
	return cmd(ctx, peoplecli.Env{
		Stdin:     stdin,
		Stdout:    stdout,
		Stderr:    stderr,
		LookupEnv: os.LookupEnv,
		Home:      home,
		Cwd:       cwd,
		Version:   version,
	}, args)
}

// topLevelFlag maps a first argument that is a flag standing for a command
// ("mcp-sidecar --version") to that command; any other leading flag belongs
// to serve.
func topLevelFlag(args []string) (string, bool) {
	if len(args) == 0 {
		return "", false
	}
	switch args[0] {
	case "--version", "-version":
		return "version", true
	case "--help", "-help", "-h":
		return "help", true
	}
	return "", false
}
