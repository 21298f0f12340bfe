package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-sidecar/mcp-sidecar/sandbox"
	"github.com/mcp-sidecar/mcp-sidecar/sandbox/servermeta"
)

// connect serves newServer over pipes, wrapped as main does, so the
// wrapper sees the bytes a real client writes.
func connect(t *testing.T, allowUnsandboxed bool) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	c2sR, c2sW := io.Pipe()
	s2cR, s2cW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- newServer(allowUnsandboxed).Run(ctx, servermeta.Transport(&mcp.IOTransport{Reader: c2sR, Writer: s2cW}))
	}()
	client := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: s2cR, Writer: c2sW}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		<-done
		cancel()
	})
	return cs
}

// fakeLauncher writes a launcher script that records its argv (one per
// line), its stdin and one environment variable into dir, then runs the
// command after "--".
func fakeLauncher(t *testing.T, dir string) string {
	t.Helper()
	exe := filepath.Join(dir, "codex")
	script := fmt.Sprintf(`#!/bin/sh
for a in "$@"; do printf '%%s\n' "$a"; done > '%[1]s/argv'
cat > '%[1]s/stdin'
printf '%%s' "$EXAMPLE_MARKER" > '%[1]s/env'
while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do shift; done
shift
exec "$@"
`, dir)
	if err := os.WriteFile(exe, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(exe, 0o755); err != nil {
		t.Fatal(err)
	}
	return exe
}

func run(t *testing.T, cs *mcp.ClientSession, command []string, meta map[string]any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run", Arguments: map[string]any{"command": command}, Meta: meta})
	if err != nil {
		t.Fatalf("CallTool: %v", err)
	}
	return res.Content[0].(*mcp.TextContent).Text, res.IsError
}

func TestStateAndCommandReachTheLauncher(t *testing.T) {
	dir := t.TempDir()
	launcher := fakeLauncher(t, dir)
	t.Setenv("EXAMPLE_MARKER", "inherited")
	cs := connect(t, false)

	// What the host sends, formatted as a host might: the launcher must get
	// these bytes, compacted, with the big integer, 1.0, 2e10, \u00e9 and <&>
	// untouched.
	const policy = `{
		"sandbox": "workspace-write",
		"writable_roots": ["/work/\u00e9"],
		"quota": 12345678901234567890, "ratio": 1.0, "limit": 2e10,
		"note": "<&>"
	}`
	const want = `{"sandbox":"workspace-write","writable_roots":["/work/\u00e9"],"quota":12345678901234567890,"ratio":1.0,"limit":2e10,"note":"<&>"}`
	meta, _ := sandbox.BuildMeta(sandbox.Injection{
		Capability: sandbox.CapPreferred,
		State:      json.RawMessage(policy),
		Launcher:   launcher,
		Transport:  sandbox.TransportStdio,
		HostMeta:   map[string]json.RawMessage{"progressToken": json.RawMessage(`"p1"`)},
	})

	out, isErr := run(t, cs, []string{"printf", "%s|", "a b", "<&>"}, meta)
	if isErr {
		t.Fatalf("run failed: %s", out)
	}
	if out != "a b|<&>|" {
		t.Errorf("command output = %q, want %q", out, "a b|<&>|")
	}

	argv, err := os.ReadFile(filepath.Join(dir, "argv"))
	if err != nil {
		t.Fatal(err)
	}
	wantArgv := strings.Join([]string{"sandbox", "--sandbox-state-json", want, "--", "printf", "%s|", "a b", "<&>"}, "\n") + "\n"
	if diff := cmp.Diff(wantArgv, string(argv)); diff != "" {
		t.Errorf("launcher argv (-want +got):\n%s", diff)
	}
	stdin, err := os.ReadFile(filepath.Join(dir, "stdin"))
	if err != nil {
		t.Fatal(err)
	}
	if len(stdin) != 0 {
		t.Errorf("launcher read %q from stdin, want nothing (the server's stdin is the MCP stream)", stdin)
	}
	env, err := os.ReadFile(filepath.Join(dir, "env"))
	if err != nil {
		t.Fatal(err)
	}
	if string(env) != "inherited" {
		t.Errorf("launcher environment EXAMPLE_MARKER = %q, want the server's environment", env)
	}
}

func TestNoLauncherFailsClosed(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	meta, _ := sandbox.BuildMeta(sandbox.Injection{
		Capability: sandbox.CapPreferred, State: json.RawMessage(`{"sandbox":"read-only"}`),
		Launcher: "/opt/codex", Transport: sandbox.TransportHTTP, // no launcher for HTTP
	})

	out, isErr := run(t, connect(t, false), []string{"touch", marker}, meta)
	if !isErr || !strings.Contains(out, "no sandbox launcher") {
		t.Errorf("run without launcher = %q (isError %v), want a refusal", out, isErr)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the command ran without a launcher")
	}

	// The operator's opt-out runs it directly.
	if out, isErr := run(t, connect(t, true), []string{"touch", marker}, meta); isErr {
		t.Fatalf("run with -allow-unsandboxed: %s", out)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("the command did not run with the opt-out: %v", err)
	}
}
