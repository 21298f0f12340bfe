// Command mcp-sidecar gives agent harnesses a complete MCP client runtime.
// With no command it speaks the host protocol (LSP-framed JSON-RPC) on
// stdin/stdout (docs/protocol.md); its commands for people live in
// internal/cli.
package main

import (
	"context"
	_ "embed"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/mcp-sidecar/mcp-sidecar/internal/cli"
)

// version is the binary's version: the VERSION file at the root of the
// module, embedded. It is the one source of the version for every way of
// building: go run, go build, go install ...@vX.Y.Z (the file at that tag
// says X.Y.Z), scripts/release.sh (which names its archives and the npm
// packages after it, and refuses a release tag that differs).
//
//go:embed VERSION
var versionFile string

var version = strings.TrimSpace(versionFile)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run is the whole program on the given streams.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runEnv(args, processEnv(stdin, stdout, stderr))
}

// runEnv runs the program in env; an interrupt (Ctrl-C, SIGTERM, SIGHUP)
// ends it and every server it started.
func runEnv(args []string, env cli.Env) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	return cli.Main(ctx, env, args)
}

// processEnv is the process's world: its streams, environment, home and
// working directory.
func processEnv(stdin io.Reader, stdout, stderr io.Writer) cli.Env {
	home, _ := os.UserHomeDir()
	cwd, _ := os.Getwd()
	return cli.Env{
		Stdin:     stdin,
		Stdout:    stdout,
		Stderr:    stderr,
		LookupEnv: os.LookupEnv,
		Home:      home,
		Cwd:       cwd,
		Version:   version,
		Build:     buildDetails(),
	}
}

// buildDetails says which commit the binary was built from, when the go
// command recorded it, and with which Go for which system ('mcp-sidecar
// version --verbose'). It is not part of the version: go run and builds
// without version control information have no commit.
func buildDetails() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var commit, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			commit = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	details := bi.GoVersion + " " + runtime.GOOS + "/" + runtime.GOARCH
	if commit != "" {
		details = "commit " + commit
		if modified == "true" {
			details += " (modified)"
		}
		details += ", " + bi.GoVersion + " " + runtime.GOOS + "/" + runtime.GOARCH
	}
	return details
}
