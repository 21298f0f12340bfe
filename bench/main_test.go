package bench

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/pprof"
	"testing"

	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
	"github.com/mcp-sidecar/mcp-sidecar/sidecar"
)

// sidecarEnv makes the re-executed test binary run the sidecar on stdio, so
// that process-level figures (RSS, pipes between real processes) measure a
// real sidecar process.
const sidecarEnv = "MCP_SIDECAR_BENCH_SIDECAR"

// profileEnv names a folder: each sidecar process then writes its CPU
// profile (cpu-<pid>.pprof) and its allocations (allocs-<pid>.pprof) there
// when it exits, for `go tool pprof`.
const profileEnv = "MCP_SIDECAR_BENCH_PROFILE"

func TestMain(m *testing.M) {
	fixture.Main()
	benchServerMain()
	if os.Getenv(sidecarEnv) == "1" {
		os.Exit(serveSidecar())
	}
	if v, ok := os.LookupEnv(gatewayEnv); ok {
		os.Exit(serveGateway(v))
	}
	code := m.Run()
	for _, dir := range buildDirs {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

// serveSidecar is the sidecar process of the benchmarks.
func serveSidecar() int {
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	dir := os.Getenv(profileEnv)
	if dir == "" {
		return sidecar.Serve(context.Background(), os.Stdin, os.Stdout, sidecar.Options{Env: os.LookupEnv, Logger: logger})
	}
	cpu, err := os.Create(filepath.Join(dir, fmt.Sprintf("cpu-%d.pprof", os.Getpid())))
	if err == nil {
		err = pprof.StartCPUProfile(cpu)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "profile:", err)
		return 1
	}
	code := sidecar.Serve(context.Background(), os.Stdin, os.Stdout, sidecar.Options{Env: os.LookupEnv, Logger: logger})
	pprof.StopCPUProfile()
	cpu.Close()
	if f, err := os.Create(filepath.Join(dir, fmt.Sprintf("allocs-%d.pprof", os.Getpid()))); err == nil {
		pprof.Lookup("allocs").WriteTo(f, 0)
		f.Close()
	}
	return code
}
