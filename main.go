// Command mcp-sidecar gives agent harnesses a complete MCP client runtime.
// With no command it speaks the host protocol (LSP-framed JSON-RPC) on
// stdin/stdout (docs/protocol.md); its commands for people live in
// internal/peoplecli.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/mcp-sidecar/mcp-sidecar/internal/peoplecli"
)

// version is set at build time with -ldflags "-X main.version=..."
// (scripts/release.sh stamps it from git); main replaces the default with
// the module version of a binary built by `go install ...@vX.Y.Z`.
var version = devVersion

const devVersion = "0.1.0-dev"

// moduleVersion is the version the go command recorded in the binary: "1.2.3"
// for `go install ...@v1.2.3`, a pseudo-version naming the commit
// ("0.0.0-20261201113311-31d561f78f39", "+dirty" if the tree was) for a
// `go build` in a clone (Go 1.24 and later), or "" for `go run` and tests.
func moduleVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok || bi.Main.Version == "" || bi.Main.Version == "(devel)" {
		return ""
	}
	return strings.TrimPrefix(bi.Main.Version, "v")
}

func main() {
	if v := moduleVersion(); version == devVersion && v != "" {
		version = v
	}
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run is the whole program on the given streams.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runEnv(args, processEnv(stdin, stdout, stderr))
}

// runEnv runs the program in env; an interrupt (Ctrl-C, SIGTERM, SIGHUP)
// ends it and every server it started.
func runEnv(args []string, env peoplecli.Env) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	return peoplecli.Main(ctx, env, args)
}

// processEnv is the process's world: its streams, environment, home and
// working directory.
func processEnv(stdin io.Reader, stdout, stderr io.Writer) peoplecli.Env {
	home, _ := os.UserHomeDir()
	cwd, _ := os.Getwd()
	return peoplecli.Env{
		Stdin:     stdin,
		Stdout:    stdout,
		Stderr:    stderr,
		LookupEnv: os.LookupEnv,
		Home:      home,
		Cwd:       cwd,
		Version:   version,
	}
}
