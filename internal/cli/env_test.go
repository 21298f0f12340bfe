package cli_test

import (
	"context"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/mcp-sidecar/mcp-sidecar/internal/cli"
)

var (
	// moduleRoot is the module's root, absolute (tests change directory):
	// the README, docs/ and VERSION the commands' output is compared
	// with, and the main package the binary tests build.
	moduleRoot string
	// version is the binary's version as main embeds it: the VERSION file.
	version string
)

// findModule sets moduleRoot and version from this package's directory,
// where go test starts its tests. TestMain calls it after fixture.Main:
// the test binary re-executed as a fixture server runs elsewhere.
func findModule() error {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		return err
	}
	b, err := os.ReadFile(filepath.Join(root, "VERSION"))
	if err != nil {
		return err
	}
	moduleRoot, version = root, strings.TrimSpace(string(b))
	return nil
}

// runEnv runs the command line in env as the binary's main does: an
// interrupt ends it and every server it started.
func runEnv(args []string, env cli.Env) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	return cli.Main(ctx, env, args)
}

// processEnv is the test process's world, as main builds it for the
// binary: its streams, environment, home and working directory. Build
// stays empty (only 'version --verbose' prints it; the binary tests cover
// it).
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
	}
}
