package cli_test

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
)

// TestMain lets the test binary serve as a fixture MCP server when a test
// spawns it (fixture.Config).
func TestMain(m *testing.M) {
	fixture.Main()
	fakeBrowser()
	if err := findModule(); err != nil {
		fmt.Fprintln(os.Stderr, "finding the module:", err)
		os.Exit(1)
	}
	// Tests point HOME at temporary directories; the go command that
	// builds the real binary keeps the caches of the real HOME.
	for _, v := range []string{"GOCACHE", "GOMODCACHE", "GOPATH"} {
		if os.Getenv(v) == "" {
			if out, err := exec.Command("go", "env", v).Output(); err == nil {
				os.Setenv(v, strings.TrimSpace(string(out)))
			}
		}
	}
	os.Exit(m.Run())
}
