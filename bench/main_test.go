package bench

import (
	"context"
	"log/slog"
	"os"
	"testing"

	"github.com/mcp-sidecar/mcp-sidecar/internal/fixture"
	"github.com/mcp-sidecar/mcp-sidecar/sidecar"
)

// sidecarEnv makes the re-executed test binary run the sidecar on stdio, so
// that process-level figures (RSS, pipes between real processes) measure a
// real sidecar process.
const sidecarEnv = "MCP_SIDECAR_BENCH_SIDECAR"

func TestMain(m *testing.M) {
	fixture.Main()
	benchServerMain()
	if os.Getenv(sidecarEnv) == "1" {
		logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
		os.Exit(sidecar.Serve(context.Background(), os.Stdin, os.Stdout, sidecar.Options{Env: os.LookupEnv, Logger: logger}))
	}
	code := m.Run()
	for _, dir := range buildDirs {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}
