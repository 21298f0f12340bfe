package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-sidecar/mcp-sidecar/internal/exampleserver"
	"github.com/mcp-sidecar/mcp-sidecar/internal/process/reaper"
	"github.com/mcp-sidecar/mcp-sidecar/sidecar"
)

// ServeDoc is serve's help text.
const ServeDoc = `Usage: mcp-sidecar [serve] [--log-level LEVEL] [--max-frame-bytes N]

Speaks the host protocol on stdin/stdout: JSON-RPC 2.0 with Content-Length
framing, as LSP. stdout carries frames only; logs go to stderr. The MCP
servers come from initialize (inline "servers", "configFiles" and
"configDiscovery"); docs/protocol.md specifies the protocol.

Example (what a harness does):
  spawn "mcp-sidecar" with pipes, then send
  Content-Length: 90\r\n\r\n{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"my-agent"}}}
`

// serveFlags are serve's flags, which harnesses also spell with one dash
// (-log-level), as the sidecar's first releases documented them.
var serveFlags = []string{"log-level", "max-frame-bytes"}

// Serve runs the sidecar on the process's stdin and stdout.
func Serve(ctx context.Context, env Env, args []string) int {
	fs := newFlagSet()
	logLevel := fs.String("log-level", "warn", "stderr log `LEVEL`: debug, info, warn or error")
	maxFrame := fs.Int64("max-frame-bytes", 64<<20, "largest host frame accepted, in bytes")
	if code, done := parseFlags(&env, "serve", fs, oneDashLongFlags(args, serveFlags), 0, 0); done {
		return code
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return usageError(env, "serve", fmt.Errorf("bad --log-level %q: use debug, info, warn or error", *logLevel))
	}
	if IsTerminal(env.Stdin, env.lookup) {
		fmt.Fprintln(env.Stderr, "mcp-sidecar speaks the host protocol (LSP-framed JSON-RPC) on stdin: a harness spawns it.\nFor people: 'mcp-sidecar --help' lists the commands (doctor, tools, call, ...). Ctrl-C or Ctrl-D ends this.")
	}
	logger := slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: level}))
	// Serving is this process's job: it becomes the reaper of what its
	// servers leave behind, with a watchdog for the case it is killed.
	r := reaper.New(reaper.Options{Watchdog: watchdogCommand(), Logger: logger})
	defer r.Close()
	return sidecar.Serve(ctx, env.Stdin, env.Stdout, sidecar.Options{
		Version:       env.Version,
		Env:           env.LookupEnv,
		Logger:        logger,
		MaxFrameBytes: *maxFrame,
		Reaper:        r,
	})
}

// watchdogCommand is the command line of the serving sidecar's watchdog:
// this binary, re-executed with the hidden command WatchdogCommand.
func watchdogCommand() []string {
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	return []string{exe, WatchdogCommand}
}

// WatchdogCommand is the hidden command that runs the watchdog
// (reaper.Watchdog) on stdin; it is not in the command table.
const WatchdogCommand = "internal-watchdog"

// oneDashLongFlags rewrites -name and -name=value of the given long flags
// as --name, which is how pflag spells them.
func oneDashLongFlags(args, names []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if a == "--" {
			copy(out[i:], args[i:])
			break
		}
		if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") {
			name, _, _ := strings.Cut(a[1:], "=")
			for _, n := range names {
				if name == n {
					out[i] = "-" + a
				}
			}
		}
	}
	return out
}

// ExampleServerDoc is example-server's help text.
const ExampleServerDoc = `Usage: mcp-sidecar example-server [--sandbox]

Serves the embedded example MCP server on stdin/stdout (newline-delimited
JSON-RPC, as every stdio MCP server). It has tools echo, add, slow (with
progress), ask (elicitation), sandbox_info and run_sandboxed, a resource, a
skill resource and a prompt. The demo and the examples run it.

Example:
  mcp-sidecar example-server --sandbox
`

// ExampleServer runs the embedded example MCP server on stdio.
func ExampleServer(ctx context.Context, env Env, args []string) int {
	fs := newFlagSet()
	sandbox := fs.Bool("sandbox", false, "advertise the codex/sandbox-state capability")
	if code, done := parseFlags(&env, "example-server", fs, oneDashLongFlags(args, []string{"sandbox"}), 0, 0); done {
		return code
	}
	if err := exampleserver.Run(ctx, exampleserver.Options{Sandbox: *sandbox}, &mcp.StdioTransport{}); err != nil && ctx.Err() == nil {
		fmt.Fprintln(env.Stderr, "example-server:", err)
		return exitFailure
	}
	return exitOK
}
