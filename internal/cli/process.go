package cli

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Run runs the command line in env as the binary does: an interrupt
// (Ctrl-C, SIGTERM, SIGHUP) ends it and every server it started.
func Run(args []string, env Env) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	return Main(ctx, env, args)
}

// ProcessEnv is the process's world: its streams, environment, home and
// working directory. The caller sets Version and Build.
func ProcessEnv(stdin io.Reader, stdout, stderr io.Writer) Env {
	home, _ := os.UserHomeDir()
	cwd, _ := os.Getwd()
	return Env{
		Stdin:     stdin,
		Stdout:    stdout,
		Stderr:    stderr,
		LookupEnv: os.LookupEnv,
		Home:      home,
		Cwd:       cwd,
	}
}
