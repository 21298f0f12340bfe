package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Each tool's servers get the environment that tool gives them: Codex's
// (and inline config) the allowlist and env_vars, Claude Code's, Cursor's
// and VS Code's the whole environment, with env on top.
func TestChildEnvByTool(t *testing.T) {
	dir := t.TempDir()
	sidecarEnv := map[string]string{"PATH": "/bin", "HOME": "/home/u", "AWS_PROFILE": "work", "GITHUB_TOKEN": "ghp_x", "ONLY_IN_LOOKUP": "1"}
	environ := []string{"PATH=/bin", "HOME=/home/u", "AWS_PROFILE=work", "GITHUB_TOKEN=ghp_x", "=C:=C:\\", "NOEQUALS"}
	files := map[string]string{
		"codex":  writeFile(t, dir, "codex/config.toml", "[mcp_servers.s]\ncommand = \"x\"\nenv_vars = [\"GITHUB_TOKEN\"]\nenv = { MODE = \"ro\" }\n"),
		"claude": writeFile(t, dir, "claude/.mcp.json", `{"mcpServers": {"s": {"command": "x", "env": {"MODE": "ro"}}}}`),
		"cursor": writeFile(t, dir, "p/.cursor/mcp.json", `{"mcpServers": {"s": {"command": "x", "env": {"MODE": "ro"}}}}`),
		"vscode": writeFile(t, dir, "p/.vscode/mcp.json", `{"servers": {"s": {"command": "x", "env": {"MODE": "ro"}}}}`),
	}
	whole := []string{"AWS_PROFILE=work", "GITHUB_TOKEN=ghp_x", "HOME=/home/u", "MODE=ro", "PATH=/bin"}
	want := map[string][]string{
		"codex":  {"GITHUB_TOKEN=ghp_x", "HOME=/home/u", "MODE=ro", "PATH=/bin"},
		"claude": whole, "cursor": whole, "vscode": whole,
	}
	for tool, path := range files {
		t.Run(tool, func(t *testing.T) {
			l := Load(FileSources([]string{path}), nil, MapLookup(sidecarEnv))
			c := l.Servers["s"]
			if c == nil || !c.Valid() {
				t.Fatalf("server %+v, errors %v", c, l.Errors)
			}
			cp := *c
			cp.Environ = environ
			if diff := cmp.Diff(want[tool], ChildEnv(&cp, MapLookup(sidecarEnv))); diff != "" {
				t.Errorf("child environment (-want +got):\n%s", diff)
			}
			// Without the whole environment given, the allowlist alone.
			if got := ChildEnv(c, MapLookup(sidecarEnv)); slices.Contains(got, "AWS_PROFILE=work") {
				t.Errorf("without Environ the child got %v", got)
			}
		})
	}
	inline, err := ParseInline([]byte(`{"s": {"command": "x"}}`))
	if err != nil {
		t.Fatal(err)
	}
	s := *inline["s"]
	s.Environ = environ
	if got := ChildEnv(&s, MapLookup(sidecarEnv)); slices.Contains(got, "AWS_PROFILE=work") {
		t.Errorf("inline config passed the whole environment: %v", got)
	}
}

func TestMissingVariables(t *testing.T) {
	c := &ServerConfig{Name: "gh", Command: "x", EnvVars: []string{"SET_AND_PASSED"}}
	env := MapLookup(map[string]string{"SET_AND_PASSED": "1", "PATH": "/bin"})
	tests := []struct {
		name, stderr string
		want         []string
	}{
		{"node", "Error: GITHUB_PERSONAL_ACCESS_TOKEN environment variable is required\n    at main (index.js:4)", []string{"GITHUB_PERSONAL_ACCESS_TOKEN"}},
		{"python KeyError", "Traceback (most recent call last):\n  File \"s.py\", line 3\nKeyError: 'OPENAI_API_KEY'", []string{"OPENAI_API_KEY"}},
		{"python environ", "  token = os.environ['token']\nKeyError: 'token'", []string{"token"}},
		{"single word", "error: environment variable TOKEN is not set", []string{"TOKEN"}},
		{"dollar", "fatal: $SLACK_BOT_TOKEN must be set", []string{"SLACK_BOT_TOKEN"}},
		{"several", "Missing required env vars: SLACK_BOT_TOKEN, SLACK_TEAM_ID", []string{"SLACK_BOT_TOKEN", "SLACK_TEAM_ID"}},
		{"passed already", "SET_AND_PASSED is not set?", nil},
		{"allowlisted and set", "PATH_EXTRA missing; PATH is required", []string{"PATH_EXTRA"}},
		{"no context", "listening on LOCAL_PORT 8080", nil},
		{"error code", "Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'x': required by y", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, MissingVariables(c, tt.stderr, env)); diff != "" {
				t.Errorf("missing (-want +got):\n%s", diff)
			}
		})
	}
	if got := MissingVariables(&ServerConfig{Name: "h", URL: "https://h"}, "API_KEY is not set", env); got != nil {
		t.Errorf("an HTTP server has no environment, got %v", got)
	}
}

// The hint says how to pass the variable in the syntax of the server's
// own file.
func TestMissingVariableHint(t *testing.T) {
	dir := t.TempDir()
	const stderr = "Error: GITHUB_TOKEN environment variable is not set"
	sidecarHas := MapLookup(map[string]string{"GITHUB_TOKEN": "ghp_x"})
	sidecarLacks := MapLookup(nil)
	tests := []struct {
		name, rel, content string
		env                Lookup
		want               string
	}{
		{"codex, set", "codex/config.toml", "[mcp_servers.gh]\ncommand = \"x\"\n", sidecarHas,
			`its stderr mentions GITHUB_TOKEN, which is set but not passed to the server: add env_vars = ["GITHUB_TOKEN"] to [mcp_servers.gh] in FILE (Codex passes a server only the variables it names)`},
		{"codex, unset", "codex/config.toml", "[mcp_servers.gh]\ncommand = \"x\"\n", sidecarLacks,
			`its stderr mentions GITHUB_TOKEN, which is not set: set it where mcp-sidecar runs and add env_vars = ["GITHUB_TOKEN"] to [mcp_servers.gh] in FILE, or give its value in [mcp_servers.gh.env]`},
		{"claude", "proj/.mcp.json", `{"mcpServers": {"gh": {"command": "x"}}}`, sidecarLacks,
			`its stderr mentions GITHUB_TOKEN, which is not set: set it where mcp-sidecar starts (the servers of FILE get its whole environment, as in Claude Code and Cursor) or give it in the server's "env" there: "env": {"GITHUB_TOKEN": "..."} (${GITHUB_TOKEN} (Claude Code) or ${env:GITHUB_TOKEN} (Cursor) reads another variable)`},
		{"vscode", "proj/.vscode/mcp.json", `{"servers": {"gh": {"command": "x"}}}`, sidecarLacks,
			`its stderr mentions GITHUB_TOKEN, which is not set: set it where mcp-sidecar starts (the servers of FILE get its whole environment, as in VS Code) or give it in the server's "env" there: "env": {"GITHUB_TOKEN": "..."} (${env:GITHUB_TOKEN} reads another variable)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, dir, tt.rel, tt.content)
			l := Load(FileSources([]string{path}), nil, tt.env)
			c := l.Servers["gh"]
			if c == nil {
				t.Fatalf("errors %v", l.Errors)
			}
			got := strings.ReplaceAll(MissingVariableHint(c, stderr, tt.env), path, "FILE")
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("hint (-want +got):\n%s", diff)
			}
		})
	}
	// Discovered files name their tool.
	proj := t.TempDir()
	path := writeFile(t, proj, ".cursor/mcp.json", `{"mcpServers": {"gh": {"command": "x"}}}`)
	l := Load([]Source{{Path: path, Format: FormatMCPServers, Tool: ToolCursor}}, nil, sidecarLacks)
	if got := MissingVariableHint(l.Servers["gh"], stderr, sidecarLacks); !strings.Contains(got, "as in Cursor)") || !strings.Contains(got, "(${env:GITHUB_TOKEN} reads") {
		t.Errorf("hint %q", got)
	}
}
