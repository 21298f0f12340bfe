// Package cli is the binary's command line: its command table (serve,
// what harnesses spawn; the commands for people: doctor, list, tools,
// call, resources, prompts, login, logout, probe-launcher, completion;
// and demo, example-server, version, help). The commands for people drive
// an in-process sidecar through the host protocol (sidecar.Serve over
// pipes, spoken to by hostclient), so what a person sees is what a harness
// gets: the same config loading, startup, catalog, calls and sandbox
// metadata, with no second implementation.
package cli

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/hostclient"
)

// Env is what a command may use of the world. main fills it from the
// process; tests fill it with buffers and their own environment.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// LookupEnv is the environment: the sidecar's (children's allowlist,
	// env_vars, tokens), config expansion, CODEX_HOME and the cache dir.
	LookupEnv config.Lookup
	// Home and Cwd locate the default config files and are the fallback
	// cwd of stdio servers without one.
	Home, Cwd string
	// Version is the sidecar's version, reported as its serverInfo;
	// Build says how the binary was built (version --verbose).
	Version string
	Build   string
	// OpenBrowser opens a URL in the user's browser (login); nil is the
	// system's opener (xdg-open, open, start).
	OpenBrowser func(ctx context.Context, url string) error
	// Checker, when set, sees every message between a command and its
	// in-process sidecar (tests set it to a *schema.Checker, which checks
	// them against the protocol schema). A command runs one sidecar at a
	// time.
	Checker hostclient.Checker

	// The person's choices from the flags every command for people has
	// (--no-color, --verbose), set by parseFlags.
	noColor bool
	verbose bool
}

func (e Env) lookup(key string) (string, bool) {
	if e.LookupEnv == nil {
		return "", false
	}
	return e.LookupEnv(key)
}

// lockedWriter serialises writes from the sidecar's logger, the host
// client's notification loop and the command itself.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// fail reports err of a command for people and returns its exit status;
// after an interrupt it says nothing (the person pressed Ctrl-C) and the
// status is 130.
func fail(ctx context.Context, w io.Writer, cmd string, err error) int {
	if interrupted(ctx) {
		return exitInterrupted
	}
	fmt.Fprintf(w, "mcp-sidecar %s: %v\n", cmd, err)
	return exitFailure
}
