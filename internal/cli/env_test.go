package cli_test

import (
	"io"
	"os"
	"path/filepath"
	"strings"

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

// processEnv is the test process's world, as main builds it for the
// binary. Build stays empty (only 'version --verbose' prints it; the
// binary tests cover it).
func processEnv(stdin io.Reader, stdout, stderr io.Writer) cli.Env {
	env := cli.ProcessEnv(stdin, stdout, stderr)
	env.Version = version
	return env
}
