package main

import (
	"os"
	"testing"

	"github.com/mcp-sidecar/mcp-sidecar/internal/fixture"
)

// TestMain lets the test binary serve as a fixture MCP server when a test
// spawns it (fixture.Config).
func TestMain(m *testing.M) {
	fixture.Main()
	os.Exit(m.Run())
}
