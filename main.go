// Command mcp-sidecar gives agent harnesses a complete MCP client runtime.
// With no subcommand it speaks the host protocol (LSP-framed JSON-RPC) on
// stdin/stdout; see README.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-sidecar/mcp-sidecar/internal/exampleserver"
	"github.com/mcp-sidecar/mcp-sidecar/internal/reaper"
	"github.com/mcp-sidecar/mcp-sidecar/sidecar"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

const usage = `mcp-sidecar: an MCP client runtime for agent harnesses.

Usage:
  mcp-sidecar [serve] [flags]        speak the host protocol on stdin/stdout (what harnesses spawn)
  mcp-sidecar demo                   run a harness against the embedded example server and show what it sees
  mcp-sidecar example-server [flags] serve the embedded example MCP server on stdio
  mcp-sidecar doctor [flags]         check the MCP servers of your config files: start each, show a table
  mcp-sidecar tools [flags]          list the qualified tool catalog and each server's disk cache state
  mcp-sidecar call SERVER TOOL [JSON-ARGS] [flags]
                                     call one tool; print the result and the _meta the server got
  mcp-sidecar probe-launcher PATH    run the sandbox launcher probe on PATH and explain the verdict
  mcp-sidecar version, --version     print the version
  mcp-sidecar help [command]         show help

Run 'mcp-sidecar help <command>' for a command's flags and examples.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cmd := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	} else if c, ok := topLevelFlag(args); ok {
		cmd, args = c, args[1:]
	}
	switch cmd {
	case "serve":
		return serveCmd(args, stdin, stdout, stderr)
	case watchdogCmdName:
		return reaper.Watchdog(stdin)
	case "demo":
		return demoCmd(args, stdout, stderr)
	case "example-server":
		return exampleServerCmd(args, stderr)
	case "doctor":
		return doctorCmd(args, stdin, stdout, stderr)
	case "tools":
		return toolsCmd(args, stdin, stdout, stderr)
	case "call":
		return callCmd(args, stdin, stdout, stderr)
	case "probe-launcher":
		return probeLauncherCmd(args, stdin, stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, "mcp-sidecar", version)
		return 0
	case "help":
		return helpCmd(args, stdout, stderr)
	default:
		fmt.Fprintf(stderr, "mcp-sidecar: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
}

func helpCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stdout, usage)
		return 0
	}
	switch args[0] {
	case "serve":
		return serveCmd([]string{"-h"}, nil, stdout, stdout)
	case "demo":
		return demoCmd([]string{"-h"}, stdout, stdout)
	case "example-server":
		return exampleServerCmd([]string{"-h"}, stdout)
	case "doctor":
		return doctorCmd([]string{"-h"}, nil, stdout, stdout)
	case "tools":
		return toolsCmd([]string{"-h"}, nil, stdout, stdout)
	case "call":
		return callCmd([]string{"-h"}, nil, stdout, stdout)
	case "probe-launcher":
		return probeLauncherCmd([]string{"-h"}, nil, stdout, stdout)
	}
	fmt.Fprintf(stderr, "mcp-sidecar: no help for unknown command %q\n", args[0])
	return 2
}

func newFlagSet(name, doc string, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprint(out, doc)
		fmt.Fprintln(out, "\nFlags:")
		fs.PrintDefaults()
	}
	return fs
}

const serveDoc = `Usage: mcp-sidecar [serve] [flags]

Speaks the host protocol on stdin/stdout: JSON-RPC 2.0 with Content-Length
framing, as LSP. stdout carries frames only; logs go to stderr. The MCP
servers come from initialize (inline "servers" and "configFiles").

Example (what a harness does):
  spawn "mcp-sidecar" with pipes, then send
  Content-Length: 90\r\n\r\n{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"my-agent"}}}
`

func serveCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("serve", serveDoc, stderr)
	logLevel := fs.String("log-level", "warn", "stderr log level: debug, info, warn or error")
	maxFrame := fs.Int64("max-frame-bytes", 64<<20, "largest host frame accepted")
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(stderr, "mcp-sidecar: bad -log-level %q: %v\n", *logLevel, err)
		return 2
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	// Serving is this process's job: it becomes the reaper of what its
	// servers leave behind, with a watchdog for the case it is killed.
	r := reaper.New(reaper.Options{Watchdog: watchdogCommand(), Logger: logger})
	defer r.Close()
	return sidecar.Serve(ctx, stdin, stdout, sidecar.Options{
		Version:       version,
		Env:           os.LookupEnv,
		Logger:        logger,
		MaxFrameBytes: *maxFrame,
		Reaper:        r,
	})
}

// watchdogCmdName is the hidden command the serving sidecar re-executes
// itself with to run its watchdog (internal/reaper).
const watchdogCmdName = "internal-watchdog"

func watchdogCommand() []string {
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	return []string{exe, watchdogCmdName}
}

const exampleServerDoc = `Usage: mcp-sidecar example-server [flags]

Serves the embedded example MCP server on stdin/stdout (newline-delimited
JSON-RPC, as every stdio MCP server). It has tools echo, add, slow (with
progress), ask (elicitation), sandbox_info and run_sandboxed, a resource, a
skill resource and a prompt. The demo and the examples run it.

Example:
  mcp-sidecar example-server --sandbox
`

func exampleServerCmd(args []string, stderr io.Writer) int {
	fs := newFlagSet("example-server", exampleServerDoc, stderr)
	sandbox := fs.Bool("sandbox", false, "advertise the codex/sandbox-state capability")
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := exampleserver.Run(ctx, exampleserver.Options{Sandbox: *sandbox}, &mcp.StdioTransport{}); err != nil && ctx.Err() == nil {
		fmt.Fprintln(stderr, "example-server:", err)
		return 1
	}
	return 0
}

func flagExit(err error) int {
	if err == flag.ErrHelp {
		return 0
	}
	return 2
}
