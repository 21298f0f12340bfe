package sidecar_test

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/hostclient"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
	"github.com/mcp-sidecar/mcp-sidecar/schema"
	"github.com/mcp-sidecar/mcp-sidecar/sidecar"
)

// BenchmarkSandboxedCall measures a sandboxed tools/call through an
// in-process sidecar to a fixture server that opted in, with a verified
// launcher (whose file is re-checked on every call) and without one (the
// baseline: the same call, same policy, no check).
func BenchmarkSandboxedCall(b *testing.B) {
	for _, withLauncher := range []bool{false, true} {
		name := "no-launcher"
		if withLauncher {
			name = "launcher"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			c := benchSidecar(b)

			params := map[string]any{
				"clientInfo": map[string]any{"name": "bench"},
				"cacheDir":   b.TempDir(),
				"servers": map[string]*config.ServerConfig{"s": fixture.Config("s", fixture.Spec{
					Experimental: map[string]json.RawMessage{"codex/sandbox-state": json.RawMessage(`{}`)},
					Tools:        []fixture.ToolSpec{tool("run", "echo")},
				})},
			}
			if withLauncher {
				path := filepath.Join(b.TempDir(), "codex")
				if err := os.WriteFile(path, []byte(launcherScript), 0o755); err != nil {
					b.Fatal(err)
				}
				params["launcher"] = map[string]any{"codexExecutable": path}
			}
			var init protocol.InitializeResult
			if err := c.Call(ctx, protocol.MethodInitialize, params, &init); err != nil {
				b.Fatal(err)
			}
			if (init.Launcher.Status == "verified") != withLauncher {
				b.Fatalf("launcher %+v", init.Launcher)
			}
			var open protocol.SessionOpenResult
			if err := c.Call(ctx, protocol.MethodSessionOpen, map[string]any{"startup": "eager"}, &open); err != nil {
				b.Fatal(err)
			}
			call := map[string]any{"sessionId": open.SessionID, "name": "mcp__s__run", "arguments": map[string]any{"text": "hi"}, "sandboxState": json.RawMessage(`{"mode":"workspace-write"}`)}
			var res json.RawMessage
			if err := c.Call(ctx, protocol.MethodToolsCall, call, &res); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if err := c.Call(ctx, protocol.MethodToolsCall, call, &res); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchSidecar starts an in-process sidecar and a host connected to it
// for a benchmark; cleanup stops both. The host checks messages against
// the schema only in a one-iteration smoke run: checking costs a good part
// of the call it would measure.
func benchSidecar(b *testing.B) *hostclient.Client {
	ctx, cancel := context.WithCancel(context.Background())
	hostR, sidecarW := io.Pipe()
	sidecarR, hostW := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		sidecar.Serve(ctx, sidecarR, sidecarW, sidecar.Options{Env: os.LookupEnv, Logger: slog.New(slog.DiscardHandler)})
		sidecarW.Close()
	}()
	var checker *schema.Checker
	if f := flag.Lookup("test.benchtime"); f != nil && f.Value.String() == "1x" {
		checker = schemaChecker(b)
	}
	c := hostclient.New(ctx, hostR, hostW, hostclient.Options{Checker: checker})
	b.Cleanup(func() { c.Close(); <-done; cancel() })
	return c
}
