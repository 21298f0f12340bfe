// Command mcp-sidecar gives agent harnesses a complete MCP client runtime.
// With no command it speaks the host protocol (LSP-framed JSON-RPC) on
// stdin/stdout (docs/protocol.md); its commands for people live in
// internal/cli.
package main

import (
	_ "embed"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"

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
	env := cli.ProcessEnv(stdin, stdout, stderr)
	env.Version, env.Build = version, buildDetails()
	return cli.Run(args, env)
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
