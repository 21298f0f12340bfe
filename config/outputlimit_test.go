package config

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestOutputTokenLimitKeys: output_token_limit is read per tool (Codex's
// tools.TOOL.output_token_limit) and per server (the sidecar's own), in
// config.toml, in .mcp.json and inline; a tool's own limit wins over its
// server's.
func TestOutputTokenLimitKeys(t *testing.T) {
	dir := t.TempDir()
	toml := writeFile(t, dir, "config.toml", `
[mcp_servers.docs]
command = "docs"
output_token_limit = 8000

[mcp_servers.docs.tools.dump]
output_token_limit = 100000
`)
	mcpJSON := writeFile(t, dir, ".mcp.json", `{"mcpServers": {"files": {"command": "files",
		"output_token_limit": 5000, "tools": {"read": {"output_token_limit": 40000}}}}}`)
	l := Load(FileSources([]string{toml, mcpJSON}), json.RawMessage(`{"web": {"url": "https://h/mcp", "output_token_limit": 3e3}}`), MapLookup(testEnv()))
	if len(l.Errors) > 0 || len(l.Warnings) > 0 {
		t.Fatalf("errors %v, warnings %v", l.Errors, l.Warnings)
	}
	type limit struct{ server, tool string }
	got := map[limit]int{}
	for _, k := range []limit{{"docs", "dump"}, {"docs", "other"}, {"files", "read"}, {"files", "write"}, {"web", "any"}} {
		got[k] = l.Servers[k.server].ToolOutputTokenLimit(k.tool)
	}
	want := map[limit]int{{"docs", "dump"}: 100000, {"docs", "other"}: 8000, {"files", "read"}: 40000, {"files", "write"}: 5000, {"web", "any"}: 3000}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(limit{})); diff != "" {
		t.Errorf("limits (-want +got):\n%s", diff)
	}
	if n := (&ServerConfig{}).ToolOutputTokenLimit("x"); n != 0 {
		t.Errorf("no limit configured: %d, want 0", n)
	}
}

// TestOutputTokenLimitBadValues: a limit that is not a whole number of
// tokens greater than 0 makes the server invalid, naming the key.
func TestOutputTokenLimitBadValues(t *testing.T) {
	for _, body := range []string{
		`"output_token_limit": 0`,
		`"output_token_limit": -5`,
		`"output_token_limit": 2.5`,
		`"output_token_limit": "25000"`,
		`"tools": {"t": {"output_token_limit": 0}}`,
	} {
		_, err := ParseInline(json.RawMessage(`{"g": {"command": "x", ` + body + `}}`))
		if err == nil || !strings.Contains(err.Error(), "output_token_limit") || !strings.Contains(err.Error(), "whole number of tokens greater than 0") {
			t.Errorf("%s: %v, want an error naming output_token_limit", body, err)
		}
	}
}
