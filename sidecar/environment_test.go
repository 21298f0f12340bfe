package sidecar_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
	"github.com/mcp-sidecar/mcp-sidecar/sidecar"
)

// writeClientJSON writes servers as a Claude Code .mcp.json in dir.
func writeClientJSON(t *testing.T, dir string, servers map[string]*config.ServerConfig) string {
	t.Helper()
	entries := map[string]any{}
	for name, c := range servers {
		entries[name] = map[string]any{"command": c.Command, "args": c.Args, "env": c.Env}
	}
	data, err := json.Marshal(map[string]any{"mcpServers": entries})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, ".mcp.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// writeCodexTOML writes servers as a Codex config.toml in dir.
func writeCodexTOML(t *testing.T, dir string, servers map[string]*config.ServerConfig) string {
	t.Helper()
	var b strings.Builder
	for name, c := range servers {
		fmt.Fprintf(&b, "[mcp_servers.%s]\ncommand = %s\nargs = [", name, strconv.Quote(c.Command))
		for i, a := range c.Args {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(strconv.Quote(a))
		}
		b.WriteString("]\n")
		fmt.Fprintf(&b, "[mcp_servers.%s.env]\n", name)
		for k, v := range c.Env {
			fmt.Fprintf(&b, "%s = %s\n", k, strconv.Quote(v))
		}
	}
	path := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// A stdio server gets the environment the tool of its file gives: the
// whole environment from a Claude Code file, the allowlist from a Codex
// file (and from initialize.servers).
func TestServerEnvironmentFollowsItsTool(t *testing.T) {
	const mark = "SIDECAR_TEST_WHOLE_ENV"
	spec := fixture.Spec{Tools: []fixture.ToolSpec{tool("env", fixture.BehaviorEnv)}}
	claude := writeClientJSON(t, t.TempDir(), map[string]*config.ServerConfig{"claude": fixture.Config("claude", spec)})
	codex := writeCodexTOML(t, t.TempDir(), map[string]*config.ServerConfig{"codex": fixture.Config("codex", spec)})

	h := newOptionsHarness(t, sidecar.Hooks{}, slog.New(slog.DiscardHandler), func(o *sidecar.Options) {
		o.Environ = func() []string { return append(os.Environ(), mark+"=given") }
	})
	h.initialize(map[string]*config.ServerConfig{"inline": fixture.Config("inline", spec)}, map[string]any{"configFiles": []string{claude, codex}})
	open := h.open(map[string]any{"startup": "eager"})
	if sum := h.waitComplete(open.SessionID, 0); len(sum.Ready) != 3 {
		t.Fatalf("startupComplete %+v", sum)
	}
	for server, want := range map[string]bool{"claude": true, "codex": false, "inline": false} {
		res, err := h.callTool(map[string]any{"sessionId": open.SessionID, "server": server, "tool": "env"})
		if err != nil {
			t.Fatalf("%s: %v", server, err)
		}
		var out struct {
			StructuredContent struct {
				Env map[string]string `json:"env"`
			} `json:"structuredContent"`
		}
		if err := json.Unmarshal(res, &out); err != nil {
			t.Fatal(err)
		}
		if got := out.StructuredContent.Env[mark] == "given"; got != want {
			t.Errorf("server %s got the whole environment: %v, want %v", server, got, want)
		}
		if _, ok := out.StructuredContent.Env[fixture.EnvVar]; !ok {
			t.Errorf("server %s lost its own env", server)
		}
	}
}

// A server that exits saying a variable is missing fails with which one
// and how to pass it in its file's syntax.
func TestStartupFailureNamesMissingVariable(t *testing.T) {
	t.Setenv("SIDECAR_TEST_SET_TOKEN", "set-but-not-passed")
	needy := func(name, variable string) *config.ServerConfig {
		return fixture.Config(name, fixture.Spec{ExitAtStart: true, StderrLines: []string{"Error: " + variable + " environment variable is required"}})
	}
	claude := writeClientJSON(t, t.TempDir(), map[string]*config.ServerConfig{"needy": needy("needy", "SIDECAR_TEST_UNSET_TOKEN")})
	codex := writeCodexTOML(t, t.TempDir(), map[string]*config.ServerConfig{"picky": needy("picky", "SIDECAR_TEST_SET_TOKEN")})

	h := newHarness(t)
	h.initialize(nil, map[string]any{"configFiles": []string{claude, codex}})
	open := h.open(map[string]any{"startup": "eager"})
	sum := h.waitComplete(open.SessionID, 0)
	errs := map[string]string{}
	for _, f := range sum.Failed {
		errs[f.Server] = f.Error
	}
	for server, want := range map[string][]string{
		"needy": {`its stderr mentions SIDECAR_TEST_UNSET_TOKEN, which is not set: set it where mcp-sidecar starts`,
			`"env": {"SIDECAR_TEST_UNSET_TOKEN": "..."}`, "; stderr:\n"},
		"picky": {`its stderr mentions SIDECAR_TEST_SET_TOKEN, which is set but not passed to the server: add env_vars = ["SIDECAR_TEST_SET_TOKEN"] to [mcp_servers.picky] in ` + codex},
	} {
		got, ok := errs[server]
		if !ok {
			t.Fatalf("%s did not fail: %+v", server, sum)
		}
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: error\n%s\nlacks %q", server, got, w)
			}
		}
		// The hint comes before the stderr tail, which doctor shows apart.
		head, _, _ := strings.Cut(got, "; stderr:\n")
		if !strings.Contains(head, "its stderr mentions") {
			t.Errorf("%s: the hint is not in the message's head: %q", server, head)
		}
	}
}
