package config

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// A header helper is read from Codex's http_headers_helper and Claude
// Code's headersHelper, with the sidecar's own timeout key, and runs in
// the folder of its file.
func TestHeadersHelperKeys(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, file, content string
		wantCmd             string
		wantTimeout         time.Duration
		wantErrors          string
		wantWarnings        string
	}{
		{name: "codex", file: "config.toml", content: `[mcp_servers.a]
url = "https://h/mcp"
http_headers_helper = "gcloud auth print-access-token | jq -R '{Authorization: (\"Bearer \" + .)}'"
`, wantCmd: `gcloud auth print-access-token | jq -R '{Authorization: ("Bearer " + .)}'`, wantTimeout: 10 * time.Second},
		{name: "codex timeout", file: "config.toml", content: `[mcp_servers.a]
url = "https://h/mcp"
http_headers_helper = "h"
http_headers_helper_timeout_sec = 2.5
`, wantCmd: "h", wantTimeout: 2500 * time.Millisecond},
		{name: "claude", file: ".mcp.json", content: `{"mcpServers": {"a": {"type": "http", "url": "https://h/mcp", "headersHelper": "./get-token.sh ${NOT_EXPANDED}"}}}`,
			wantCmd: "./get-token.sh ${NOT_EXPANDED}", wantTimeout: 10 * time.Second},
		{name: "claude with codex key", file: "mcp.json", content: `{"mcpServers": {"a": {"url": "https://h/mcp", "http_headers_helper": "h", "http_headers_helper_timeout_sec": 30}}}`,
			wantCmd: "h", wantTimeout: 30 * time.Second},
		{name: "both", file: ".mcp.json", content: `{"mcpServers": {"a": {"url": "https://h/mcp", "headersHelper": "a", "http_headers_helper": "b"}}}`,
			wantErrors: `server "a": key "http_headers_helper": set either headersHelper or http_headers_helper, not both`},
		{name: "stdio", file: ".mcp.json", content: `{"mcpServers": {"a": {"command": "x", "headersHelper": "h"}}}`,
			wantErrors: `server "a": key "headersHelper": not supported for a stdio server (command); it applies only to streamable HTTP servers (url)`},
		{name: "empty", file: "config.toml", content: "[mcp_servers.a]\nurl = \"https://h/mcp\"\nhttp_headers_helper = \"  \"\n",
			wantErrors: `server "a": key "http_headers_helper": must not be empty`},
		{name: "bad timeout", file: "config.toml", content: "[mcp_servers.a]\nurl = \"https://h/mcp\"\nhttp_headers_helper = \"h\"\nhttp_headers_helper_timeout_sec = 0\n",
			wantErrors: `server "a": key "http_headers_helper_timeout_sec": must be a number of seconds greater than 0`},
		{name: "claude key in codex file", file: "config.toml", content: "[mcp_servers.a]\nurl = \"https://h/mcp\"\nheadersHelper = \"h\"\n",
			wantWarnings: `server "a": key "headersHelper": ignored: unknown key; Codex's key for a command that prints headers is "http_headers_helper"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sub := t.TempDir()
			path := writeFile(t, sub, tt.file, tt.content)
			l := Load(FileSources([]string{path}), nil, MapLookup(nil))
			errs := strings.ReplaceAll(l.Errors.Error(), path+": ", "")
			if diff := cmp.Diff(tt.wantErrors, errs); diff != "" {
				t.Fatalf("errors (-want +got):\n%s", diff)
			}
			warns := strings.ReplaceAll(l.Warnings.Error(), path+": ", "")
			if diff := cmp.Diff(tt.wantWarnings, warns); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
			if tt.wantErrors != "" || tt.wantWarnings != "" {
				return
			}
			c := l.Servers["a"]
			if c.HTTPHeadersHelper != tt.wantCmd || c.HeadersHelperTimeout() != tt.wantTimeout {
				t.Errorf("helper %q, timeout %s; want %q, %s", c.HTTPHeadersHelper, c.HeadersHelperTimeout(), tt.wantCmd, tt.wantTimeout)
			}
			if c.Dir != sub {
				t.Errorf("Dir = %q, want the file's folder %q", c.Dir, sub)
			}
		})
	}
	_ = dir
}

// A server of ~/.claude.json runs its helper in the project, as Claude
// Code runs it in the folder it was started in; inline config has no
// folder of its own.
func TestHeadersHelperDir(t *testing.T) {
	home, proj := t.TempDir(), t.TempDir()
	writeFile(t, home, ".claude.json", `{"projects": {"`+proj+`": {"mcpServers": {"a": {"type": "http", "url": "https://h/mcp", "headersHelper": "./h.sh"}}}}}`)
	l := Load([]Source{{Path: filepath.Join(home, ".claude.json"), Format: FormatClaudeLocal, Tool: ToolClaude, Scope: ScopeLocal, Project: proj}}, nil, MapLookup(nil))
	if c := l.Servers["a"]; c == nil || c.Dir != proj {
		t.Fatalf("server %+v (errors %v), want Dir %q", c, l.Errors, proj)
	}
	inline, err := ParseInline([]byte(`{"a": {"url": "https://h/mcp", "http_headers_helper": "h"}}`))
	if err != nil || inline["a"].Dir != "" {
		t.Fatalf("inline %+v, %v", inline["a"], err)
	}
}
