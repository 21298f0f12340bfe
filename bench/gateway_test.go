package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/gateway"
	"github.com/mcp-sidecar/mcp-sidecar/sidecar"
)

// gatewayEnv makes the re-executed test binary serve 'mcp-sidecar mcp'
// on stdio (package gateway) in front of the server whose config it
// holds as JSON: a real gateway process, as an MCP client spawns it.
const gatewayEnv = "MCP_SIDECAR_BENCH_GATEWAY"

// serveGateway is the gateway process of the benchmarks.
func serveGateway(v string) int {
	var servers map[string]any
	if err := json.Unmarshal([]byte(v), &servers); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "bench-gateway-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	g, err := gateway.Start(ctx, gateway.Options{
		Initialize: map[string]any{"servers": servers, "cacheDir": dir},
		Sidecar:    sidecar.Options{Env: os.LookupEnv, Logger: logger},
		Logger:     logger,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer g.Close(ctx)
	if err := g.ServeStdio(ctx, &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// startGatewayClient is a go-sdk client of a gateway process serving cfg
// as its one server (so the tool keeps its own name).
func startGatewayClient(tb testing.TB, cfg *config.ServerConfig) *direct {
	tb.Helper()
	servers, err := json.Marshal(map[string]any{cfg.Name: map[string]any{"command": cfg.Command, "args": cfg.Args, "env": cfg.Env}})
	if err != nil {
		tb.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), gatewayEnv+"="+string(servers))
	cmd.Stderr = os.Stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "bench-gateway-client", Version: "1"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	ctx, cancel := context.WithTimeout(context.Background(), safety)
	defer cancel()
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		tb.Fatalf("client of the gateway: %v", err)
	}
	tb.Cleanup(func() { session.Close() })
	return &direct{session: session}
}

// BenchmarkGatewayCall: one echo call from a go-sdk client, straight to
// the fixture server (via=direct) or through a gateway process
// (via=gateway: client -> gateway -> in-process sidecar -> server).
func BenchmarkGatewayCall(b *testing.B) {
	for _, via := range []string{"direct", "gateway"} {
		b.Run("via="+via, func(b *testing.B) {
			c := gatewayContender(b, via)
			if _, err := c.callTool("echo", echoArgs); err != nil { // start-up out of the loop
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				if _, err := c.callTool("echo", echoArgs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func gatewayContender(tb testing.TB, via string) *direct {
	if via == "direct" {
		return startDirect(tb, fixtureEcho())
	}
	return startGatewayClient(tb, fixtureEcho())
}

// TestGatewayOverhead measures the gateway's call overhead: the median
// of the per-block ratios of gateway to direct call latency, in
// interleaved blocks so that the machine's load hits both alike.
//
//	MCP_SIDECAR_BENCH_REPORT=1 go test -run TestGatewayOverhead -v ./bench/
func TestGatewayOverhead(t *testing.T) {
	if os.Getenv(reportEnv) == "" {
		t.Skipf("set %s=1 to measure", reportEnv)
	}
	d, g := gatewayContender(t, "direct"), gatewayContender(t, "gateway")
	call := func(c *direct) func() error {
		return func() error { _, err := c.callTool("echo", echoArgs); return err }
	}
	for _, c := range []*direct{d, g} { // warm up
		if _, err := sample(200, call(c)); err != nil {
			t.Fatal(err)
		}
	}
	var ratios []float64
	var ds, gs []time.Duration
	for range 20 {
		dd, err := sample(200, call(d))
		if err != nil {
			t.Fatal(err)
		}
		gd, err := sample(200, call(g))
		if err != nil {
			t.Fatal(err)
		}
		ds, gs = append(ds, dd...), append(gs, gd...)
		ratios = append(ratios, float64(median(gd))/float64(median(dd)))
	}
	t.Logf("machine: %s", machine())
	t.Logf("| path | p50 | p99 |\n|---|---|---|\n| direct (go-sdk client, stdio fixture) | %s | %s |\n| gateway process (mcp-sidecar mcp) | %s | %s |",
		ms(median(ds)), ms(quantile(ds, 0.99)), ms(median(gs)), ms(quantile(gs, 0.99)))
	t.Logf("median of 20 block ratios, gateway / direct: %.2f", medianF(ratios))
}
