package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// secret is planted in environments and files; no error may show it.
const secret = "s3cr3t-value"

func ptr[T any](v T) *T { return &v }

// writeFile writes content at dir/rel and returns the path.
func writeFile(t *testing.T, dir, rel, content string) string {
	t.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func testEnv() map[string]string {
	return map[string]string{
		"HOME":         "/home/u",
		"PATH":         "/usr/bin:/bin",
		"TOKEN":        secret,
		"EMPTY":        "",
		"API_HOST":     "api.example.com",
		"SECRET_TOKEN": secret,
	}
}

func TestLoadFileValid(t *testing.T) {
	tests := []struct {
		name  string
		file  string // relative to the test's directory; "DIR" in content and want is that directory
		body  string
		extra map[string]string // more files to write
		want  map[string]*ServerConfig
		notes []string
	}{
		{
			name: "codex toml",
			file: "codex/config.toml",
			body: `
model = "o3"
approval_policy = "never"

[mcp_servers.docs]
command = "npx"
args = ["-y", "@example/docs-mcp"]
env_vars = ["GITHUB_TOKEN"]
cwd = "work"
enabled_tools = ["search", "fetch"]
disabled_tools = []
startup_timeout_sec = 20
tool_timeout_sec = 2.5
startup_readiness = "catalog"
protocol_version = "2025-06-18"
required = true

[mcp_servers.docs.env]
LOG = "${NOT_EXPANDED}"

[mcp_servers.remote]
url = "https://mcp.example.com/mcp"
bearer_token_env_var = "REMOTE_TOKEN"
http_headers = { "X-Team" = "core" }
env_http_headers = { "X-Key" = "REMOTE_KEY" }
enabled = false
startup_timeout_ms = 1500

[mcp_servers.local]
command = "./bin/server"
cwd = "/abs/dir"
`,
			want: map[string]*ServerConfig{
				"docs": {
					Name: "docs", Source: "DIR/codex/config.toml",
					Command: "npx", Args: []string{"-y", "@example/docs-mcp"},
					Env: map[string]string{"LOG": "${NOT_EXPANDED}"}, EnvVars: []string{"GITHUB_TOKEN"},
					Cwd: "DIR/codex/work", EnabledTools: []string{"search", "fetch"}, DisabledTools: []string{},
					StartupTimeoutSec: ptr(20.0), ToolTimeoutSec: ptr(2.5), StartupReadiness: "catalog",
					ProtocolVersion: "2025-06-18", Required: true,
				},
				"remote": {
					Name: "remote", Source: "DIR/codex/config.toml",
					URL: "https://mcp.example.com/mcp", BearerTokenEnvVar: "REMOTE_TOKEN",
					HTTPHeaders: map[string]string{"X-Team": "core"}, EnvHTTPHeaders: map[string]string{"X-Key": "REMOTE_KEY"},
					Enabled: ptr(false), StartupTimeoutSec: ptr(1.5),
				},
				"local": {
					Name: "local", Source: "DIR/codex/config.toml",
					Command: "DIR/codex/bin/server", Cwd: "/abs/dir",
				},
			},
		},
		{
			name: "codex toml without servers",
			file: "config.toml",
			body: "model = \"o3\"\n",
			want: map[string]*ServerConfig{},
		},
		{
			name: "claude mcp.json",
			file: "proj/.mcp.json",
			body: `{
  "mcpServers": {
    "gh": {
      "command": "${HOME}/bin/gh-mcp",
      "args": ["--host", "${API_HOST}", "--mode=${MODE:-readonly}", "${EMPTY:-fallback}", "$TOKEN"],
      "env": {"GITHUB_TOKEN": "${SECRET_TOKEN}"},
      "autoApprove": ["search"],
      "disabled": true
    },
    "web": {
      "type": "http",
      "url": "https://${API_HOST}/mcp",
      "headers": {"Authorization": "Bearer ${TOKEN}"},
      "startup_timeout_sec": 5,
      "enabled_tools": ["a"],
      "timeout": 3000
    },
    "stream": {"type": "streamable-http", "url": "http://localhost:8080/mcp"},
    "legacy": {"type": "sse", "url": "https://${API_HOST}/sse", "headers": {"X-Key": "${TOKEN}"}, "protocol_version": "2024-11-05"},
    "script": {"type": "stdio", "command": "./server.sh", "cwd": "sub"}
  },
  "otherClientSetting": true
}`,
			want: map[string]*ServerConfig{
				"gh": {
					Name: "gh", Source: "DIR/proj/.mcp.json",
					Command: "/home/u/bin/gh-mcp",
					Args:    []string{"--host", "api.example.com", "--mode=readonly", "fallback", "$TOKEN"},
					Env:     map[string]string{"GITHUB_TOKEN": secret}, Enabled: ptr(false),
				},
				"web": {
					Name: "web", Source: "DIR/proj/.mcp.json",
					URL: "https://api.example.com/mcp", HTTPHeaders: map[string]string{"Authorization": "Bearer " + secret},
					StartupTimeoutSec: ptr(5.0), EnabledTools: []string{"a"},
				},
				"stream": {Name: "stream", Source: "DIR/proj/.mcp.json", URL: "http://localhost:8080/mcp"},
				"legacy": {Name: "legacy", Source: "DIR/proj/.mcp.json", URL: "https://api.example.com/sse", SSE: true,
					HTTPHeaders: map[string]string{"X-Key": secret}, ProtocolVersion: "2024-11-05"},
				"script": {Name: "script", Source: "DIR/proj/.mcp.json", Command: "DIR/proj/server.sh", Cwd: "DIR/proj/sub"},
			},
			notes: []string{
				`DIR/proj/.mcp.json: server "gh": key "autoApprove": ignored: unknown key`,
				`DIR/proj/.mcp.json: server "web": key "timeout": ignored: unknown key; use "startup_timeout_sec" or "tool_timeout_sec"`,
			},
		},
		{
			name: "cursor mcp.json with cursor variables",
			file: "proj/.cursor/mcp.json",
			body: `{"mcpServers": {"c": {"command": "node", "args": ["${workspaceFolder}/s.js", "${userHome}", "${env:API_HOST}", "${workspaceFolderBasename}"]},
  "old": {"type": "sse", "url": "http://localhost:8000/sse"}}}`,
			want: map[string]*ServerConfig{
				"c": {Name: "c", Source: "DIR/proj/.cursor/mcp.json", Command: "node",
					Args: []string{"DIR/proj/s.js", "/home/u", "api.example.com", "proj"}},
				"old": {Name: "old", Source: "DIR/proj/.cursor/mcp.json", URL: "http://localhost:8000/sse", SSE: true},
			},
		},
		{
			name: "vscode mcp.json",
			file: "ws/.vscode/mcp.json",
			body: `// VS Code writes JSON with comments
{
  "inputs": [{"type": "promptString", "id": "unused", "password": true}],
  "servers": {
    "fs": {
      "type": "stdio",
      "command": "${workspaceFolder}/node_modules/.bin/fs-mcp", /* inline */
      "args": ["${userHome}/data", "http://not-a-comment//x"],
      "env": {"MODE": "from-env", "TOKEN": "${env:SECRET_TOKEN}"},
      "envFile": "${workspaceFolder}/.env",
      "cwd": "${workspaceFolder}",
      "dev": {"watch": "src/**"},
    },
    "api": {"type": "http", "url": "https://example.com/mcp", "headers": {"X-Key": "${env:SECRET_TOKEN}"}},
    "old": {"type": "sse", "url": "https://example.com/sse"},
  },
}`,
			extra: map[string]string{
				"ws/.env": "# comment\nMODE=from-file\nexport FILE_ONLY=\"quoted value\"\n\nSINGLE='x'\n",
			},
			want: map[string]*ServerConfig{
				"fs": {
					Name: "fs", Source: "DIR/ws/.vscode/mcp.json",
					Command: "DIR/ws/node_modules/.bin/fs-mcp",
					Args:    []string{"/home/u/data", "http://not-a-comment//x"},
					Env:     map[string]string{"MODE": "from-env", "TOKEN": secret, "FILE_ONLY": "quoted value", "SINGLE": "x"},
					Cwd:     "DIR/ws",
				},
				"api": {Name: "api", Source: "DIR/ws/.vscode/mcp.json", URL: "https://example.com/mcp",
					HTTPHeaders: map[string]string{"X-Key": secret}},
				"old": {Name: "old", Source: "DIR/ws/.vscode/mcp.json", URL: "https://example.com/sse", SSE: true},
			},
			notes: []string{`DIR/ws/.vscode/mcp.json: server "fs": key "dev": ignored: unknown key`},
		},
		{
			name:  "vscode mcp.json outside .vscode",
			file:  "flat/mcp.json",
			body:  `{"servers": {"s": {"command": "srv", "args": ["${workspaceFolder}"], "envFile": "vars.env"}}}`,
			extra: map[string]string{"flat/vars.env": "A=1\n"},
			want: map[string]*ServerConfig{
				"s": {Name: "s", Source: "DIR/flat/mcp.json", Command: "srv", Args: []string{"DIR/flat"},
					Env: map[string]string{"A": "1"}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			fix := func(s string) string { return strings.ReplaceAll(s, "DIR", dir) }
			path := writeFile(t, dir, tt.file, tt.body)
			for rel, content := range tt.extra {
				writeFile(t, dir, rel, content)
			}
			l := Load(FileSources([]string{path}), nil, MapLookup(testEnv()))
			if err := l.Errors.asError(); err != nil {
				t.Fatalf("Load: %v", err)
			}
			got := l.Servers
			for _, c := range got {
				c.Origin = Source{}
			}
			var notes []string
			for _, w := range l.Warnings {
				notes = append(notes, w.Error())
			}
			want := make(map[string]*ServerConfig)
			for name, c := range tt.want {
				c.Source, c.Command, c.Cwd = fix(c.Source), fix(c.Command), fix(c.Cwd)
				for i := range c.Args {
					c.Args[i] = fix(c.Args[i])
				}
				want[name] = c
			}
			// Where the file is, and whose: TestChildEnvByTool and
			// TestHeadersHelperKeys check these; TestExpandedValues what
			// the variables put in.
			if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(ServerConfig{}, "Dir", "InheritEnv", "Expanded")); diff != "" {
				t.Errorf("servers (-want +got):\n%s", diff)
			}
			var wantNotes []string
			for _, n := range tt.notes {
				wantNotes = append(wantNotes, fix(n))
			}
			if diff := cmp.Diff(wantNotes, notes); diff != "" {
				t.Errorf("notes (-want +got):\n%s", diff)
			}
			// LoadFile agrees with Load, and every server is valid.
			single, err := LoadFile(path, MapLookup(testEnv()))
			if err != nil {
				t.Fatalf("LoadFile: %v", err)
			}
			if diff := cmp.Diff(got, single); diff != "" {
				t.Errorf("LoadFile differs from Load (-Load +LoadFile):\n%s", diff)
			}
			for name, c := range got {
				if err := Validate(c); err != nil {
					t.Errorf("Validate(%s): %v", name, err)
				}
			}
		})
	}
}

func TestLoadFileErrors(t *testing.T) {
	tests := []struct {
		name  string
		file  string
		body  string
		extra map[string]string
		want  string // "F" is the file's path
	}{
		// Codex TOML.
		{"both command and url", "c.toml", `[mcp_servers.a]
command = "x"
url = "https://h/mcp"`, nil,
			`F: server "a": key "url": both command and url are set; a server is either stdio (command) or streamable HTTP (url)`},
		{"neither command nor url", "c.toml", `[mcp_servers.a]
args = ["x"]`, nil,
			`F: server "a": key "command": neither command nor url is set; a stdio server needs command, a streamable HTTP server needs url`},
		{"stdio keys with url", "c.toml", `[mcp_servers.a]
url = "https://h/mcp"
args = []
cwd = "/tmp"
env_vars = ["X"]
[mcp_servers.a.env]
K = "` + secret + `"`, nil,
			`F: server "a": key "args": not supported for a streamable HTTP server (url); it applies only to stdio servers (command)
F: server "a": key "env": not supported for a streamable HTTP server (url); it applies only to stdio servers (command)
F: server "a": key "env_vars": not supported for a streamable HTTP server (url); it applies only to stdio servers (command)
F: server "a": key "cwd": not supported for a streamable HTTP server (url); it applies only to stdio servers (command)`},
		{"http keys with command", "c.toml", `[mcp_servers.a]
command = "x"
bearer_token_env_var = "T"
http_headers = { Authorization = "Bearer ` + secret + `" }
env_http_headers = { "X-Key" = "K" }`, nil,
			`F: server "a": key "bearer_token_env_var": not supported for a stdio server (command); it applies only to streamable HTTP servers (url)
F: server "a": key "http_headers": not supported for a stdio server (command); it applies only to streamable HTTP servers (url)
F: server "a": key "env_http_headers": not supported for a stdio server (command); it applies only to streamable HTTP servers (url)`},
		{"inline bearer token", "c.toml", `[mcp_servers.github]
url = "https://h/mcp"
bearer_token = "` + secret + `"`, nil,
			`F: server "github": key "bearer_token": inline bearer tokens are refused; use bearer_token_env_var`},
		{"bad server name", "c.toml", `[mcp_servers."my server"]
command = "x"`, nil,
			`F: server "my server": invalid server name; use only letters, digits, '_' and '-'`},
		{"bad readiness, timeouts, protocol version", "c.toml", `[mcp_servers.a]
command = "x"
startup_readiness = "tools"
startup_timeout_sec = -0.5
tool_timeout_sec = -1
protocol_version = "2025-13-01"`, nil,
			`F: server "a": key "startup_timeout_sec": must be a number of seconds, 0 or more
F: server "a": key "tool_timeout_sec": must be a number of seconds, 0 or more
F: server "a": key "startup_readiness": must be "connection" or "catalog"
F: server "a": key "protocol_version": must be a date like "2025-11-25"`},
		{"infinite timeout", "c.toml", `[mcp_servers.a]
command = "x"
startup_timeout_sec = inf`, nil,
			`F: server "a": key "startup_timeout_sec": must be a number of seconds, 0 or more`},
		{"bad url scheme", "c.toml", `[mcp_servers.a]
url = "ftp://user:` + secret + `@h/mcp"`, nil,
			`F: server "a": key "url": must be an http:// or https:// URL with a host`},
		{"url without host", "c.toml", `[mcp_servers.a]
url = "https:///mcp?token=` + secret + `"`, nil,
			`F: server "a": key "url": must be an http:// or https:// URL with a host`},
		{"wrong types", "c.toml", `[mcp_servers.a]
command = "x"
args = "x"
enabled_tools = "search"
disabled_tools = [1, "b"]
env = ["K=V"]
enabled = "yes"
startup_timeout_sec = "10"`, nil,
			`F: server "a": key "args": expected an array of strings, got a string
F: server "a": key "disabled_tools[0]": expected a string, got a number
F: server "a": key "enabled": expected a boolean, got a string
F: server "a": key "enabled_tools": expected an array of strings, got a string
F: server "a": key "env": expected a table of strings, got an array
F: server "a": key "startup_timeout_sec": expected a number, got a string`},
		{"env value not a string", "c.toml", `[mcp_servers.a]
command = "x"
env = { PORT = 8080 }`, nil,
			`F: server "a": key "env.PORT": expected a string, got a number`},
		{"unknown keys are ignored", "c.toml", `[mcp_servers.a]
comand = "x"
autoApprove = ["y"]`, nil,
			`F: server "a": key "command": neither command nor url is set; a stdio server needs command, a streamable HTTP server needs url`},
		{"several servers, all problems", "c.toml", `[mcp_servers.b]
url = "x"
[mcp_servers.a]
command = ""
[mcp_servers.ok]
command = "fine"`, nil,
			`F: server "a": key "command": must not be empty
F: server "a": key "command": neither command nor url is set; a stdio server needs command, a streamable HTTP server needs url
F: server "b": key "url": must be an http:// or https:// URL with a host`},
		{"mcp_servers not a table", "c.toml", `mcp_servers = "x"`, nil,
			`F: key "mcp_servers": expected a table of servers ([mcp_servers.NAME])`},
		{"server not a table", "c.toml", `[mcp_servers]
a = 1`, nil,
			`F: server "a": expected a table of server settings, got a number`},
		{"toml syntax error hides the value", "c.toml", `[mcp_servers.a]
command = "x"
env = { TOKEN = ` + secret + ` }`, nil,
			`F: invalid TOML at line 3, column 17 (after key "mcp_servers.a.env.TOKEN"): expected value but found "s" instead`},
		{"toml syntax error elides a longer fragment", "c.toml", `[mcp_servers.a]
command = "x"
env = { TOKEN = t` + secret + ` }`, nil,
			`F: invalid TOML at line 3, column 17 (after key "mcp_servers.a.env.TOKEN"): expected value but found "…" instead`},
		{"bad env and header names", "c.toml", `[mcp_servers.a]
url = "https://h/mcp"
http_headers = { "Bad Header" = "v", "X-Ok" = "line\nbreak` + secret + `" }
env_http_headers = { "X-E" = "A=B" }
bearer_token_env_var = "A=B"`, nil,
			`F: server "a": key "bearer_token_env_var": invalid environment variable name
F: server "a": key "http_headers.Bad Header": invalid HTTP header name
F: server "a": key "http_headers.X-Ok": value contains a line break or NUL byte
F: server "a": key "env_http_headers.X-E": value must be the name of an environment variable`},

		// Claude Code / Cursor.
		{"sse with a command or a modern version", ".mcp.json", `{"mcpServers": {"a": {"type": "sse", "command": "x"}, "b": {"type": "sse", "url": "https://h/sse", "protocol_version": "2026-07-28"}}}`, nil,
			`F: server "a": key "type": is "sse" but the server has a command and no url
F: server "b": key "protocol_version": 2026-07-28 has no HTTP+SSE transport (type "sse" speaks 2025-11-25 and earlier): use type "http" with the server's Streamable HTTP endpoint for 2026-07-28`},
		{"unset variable", ".mcp.json", `{"mcpServers": {"s": {"command": "x", "args": ["${NOPE}"], "env": {"K": "${ALSO_NOPE}"}}}}`, nil,
			`F: server "s": key "args[0]": environment variable "NOPE" is not set (write ${NOPE:-default} to give a default)
F: server "s": key "env.K": environment variable "ALSO_NOPE" is not set (write ${ALSO_NOPE:-default} to give a default)`},
		{"unset variable in headers and url", ".mcp.json", `{"mcpServers": {"s": {"type": "http", "url": "https://${HOSTX}/mcp", "headers": {"Authorization": "Bearer ${NOPE}"}}}}`, nil,
			`F: server "s": key "headers.Authorization": environment variable "NOPE" is not set (write ${NOPE:-default} to give a default)
F: server "s": key "url": environment variable "HOSTX" is not set (write ${HOSTX:-default} to give a default)
F: server "s": key "command": neither command nor url is set; a stdio server needs command, a streamable HTTP server needs url`},
		{"headers on a stdio server named as written", ".mcp.json", `{"mcpServers": {"s": {"command": "x", "headers": {"Authorization": "Bearer ` + secret + `"}}}}`, nil,
			`F: server "s": key "headers": not supported for a stdio server (command); it applies only to streamable HTTP servers (url)`},
		{"type contradicts", ".mcp.json", `{"mcpServers": {"a": {"type": "stdio", "url": "https://h/mcp"}, "b": {"type": "http", "command": "x"}, "c": {"type": "websocket", "command": "x"}}}`, nil,
			`F: server "a": key "type": is "stdio" but the server has a url and no command
F: server "b": key "type": is "http" but the server has a command and no url
F: server "c": key "type": must be "stdio", "http", "streamable-http" or "sse"`},
		{"claude inline bearer and wrong types", ".mcp.json", `{"mcpServers": {"s": {"url": "https://h/mcp", "bearer_token": "` + secret + `", "headers": ["x"], "disabled": "no"}}}`, nil,
			`F: server "s": key "bearer_token": inline bearer tokens are refused; use bearer_token_env_var
F: server "s": key "disabled": expected a boolean, got a string
F: server "s": key "headers": expected an object of strings, got an array`},
		{"disabled contradicts enabled", ".mcp.json", `{"mcpServers": {"s": {"command": "x", "enabled": true, "disabled": true}}}`, nil,
			`F: server "s": key "disabled": contradicts enabled`},
		{"invalid json", ".mcp.json", "{\n  \"mcpServers\": {\"s\": {\"command\": \"x\",}\n  oops\n}", nil,
			`F: invalid JSON at line 3, column 3: invalid character 'o' after object value (expecting ',' or '}')`},
		{"truncated json", ".mcp.json", `{"mcpServers": {`, nil,
			`F: invalid JSON at line 1, column 17: parsing value: unexpected EOF`},
		{"trailing data", ".mcp.json", `{"mcpServers": {}} {}`, nil,
			`F: invalid JSON at line 1, column 20: invalid character '{' after top-level value`},
		{"no servers object", ".mcp.json", `{"mcp": {}}`, nil,
			`F: no "mcpServers" (Claude Code, Cursor) or "servers" (VS Code) object`},
		{"servers is an array", ".mcp.json", `{"mcpServers": []}`, nil,
			`F: key "mcpServers": expected an object mapping server names to settings`},
		{"both top-level keys", ".mcp.json", `{"mcpServers": {}, "servers": {}}`, nil,
			`F: both "mcpServers" and "servers" are present; a file is either Claude Code/Cursor (mcpServers) or VS Code (servers)`},
		{"top level not an object", ".mcp.json", `[]`, nil,
			`F: expected a JSON object with "mcpServers" or "servers"`},

		// VS Code.
		{"input variable not declared", ".vscode/mcp.json", `{"servers": {"s": {"type": "http", "url": "https://h/mcp", "headers": {"Authorization": "Bearer ${input:token}"}}}}`, nil,
			`F: server "s": key "headers.Authorization": ${input:token} is not declared in the file's "inputs" (a "promptString" input with id "token")`},
		{"input variable outside VS Code", ".mcp.json", `{"mcpServers": {"s": {"type": "http", "url": "https://h/mcp", "headers": {"Authorization": "Bearer ${input:token}"}}}}`, nil,
			`F: server "s": key "headers.Authorization": ${input:token} is VS Code's, and this file has no inputs; use ${env:VAR} and set the variable instead`},
		{"unset env variable", ".vscode/mcp.json", `{"servers": {"s": {"command": "x", "env": {"T": "${env:NOPE}"}}}}`, nil,
			`F: server "s": key "env.T": environment variable "NOPE" (in ${env:NOPE}) is not set`},
		{"unsupported variable", ".vscode/mcp.json", `{"servers": {"s": {"command": "${config:python.path}"}}}`, nil,
			`F: server "s": key "command": unsupported variable ${config:python.path}; mcp-sidecar resolves ${env:VAR}, ${userHome}, ${workspaceFolder}, ${workspaceFolderBasename} and ${pathSeparator}
F: server "s": key "command": neither command nor url is set; a stdio server needs command, a streamable HTTP server needs url`},
		{"vscode type", ".vscode/mcp.json", `{"servers": {"a": {"type": "streamable-http", "url": "https://h/mcp"}, "b": {"type": "ws", "url": "https://h/ws"}}}`, nil,
			`F: server "a": key "type": must be "stdio", "http" or "sse"
F: server "b": key "type": must be "stdio", "http" or "sse"`},
		{"envFile missing", ".vscode/mcp.json", `{"servers": {"s": {"command": "x", "envFile": "${env:SECRET_TOKEN}.env"}}}`, nil,
			`F: server "s": key "envFile": ${env:SECRET_TOKEN}.env: cannot be read: no such file or directory`},
		// The path meant is shown: the path variables resolved, the
		// others (which may insert secrets) as written.
		{"envFile missing in the home folder", ".vscode/mcp.json", `{"servers": {"s": {"command": "x", "envFile": "${userHome}/${env:SECRET_TOKEN}/${workspaceFolderBasename}.env"}}}`, nil,
			`F: server "s": key "envFile": /home/u/${env:SECRET_TOKEN}/DIRBASE.env: cannot be read: no such file or directory`},
		{"envFile bad line", ".vscode/mcp.json", `{"servers": {"s": {"command": "x", "envFile": "bad.env"}}}`,
			map[string]string{".vscode/bad.env": "OK=1\nTOKEN " + secret + "\n"},
			`F: server "s": key "envFile": bad.env: line 2 is not KEY=VALUE`},
		{"envFile on http server", ".vscode/mcp.json", `{"servers": {"s": {"type": "http", "url": "https://h/mcp", "envFile": "x.env"}}}`, nil,
			`F: server "s": key "envFile": not supported for a streamable HTTP server (url); it applies only to stdio servers (command)`},
		{"envFile is a directory", ".vscode/mcp.json", `{"servers": {"s": {"command": "x", "envFile": "."}}}`, nil,
			`F: server "s": key "envFile": .: not a regular file (a directory)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := writeFile(t, dir, tt.file, tt.body)
			for rel, content := range tt.extra {
				writeFile(t, dir, rel, content)
			}
			servers, err := LoadFile(path, MapLookup(testEnv()))
			if err == nil {
				t.Fatalf("LoadFile succeeded with %v; want error", servers)
			}
			checkErrorShape(t, err, path)
			want := strings.ReplaceAll(tt.want, "F: ", path+": ")
			want = strings.ReplaceAll(want, "DIRBASE", filepath.Base(dir))
			if diff := cmp.Diff(want, err.Error()); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error shows a secret value: %v", err)
			}
			for name, c := range servers {
				if err := Validate(c); err != nil {
					t.Errorf("an invalid server %q was returned: %v", name, err)
				}
			}
		})
	}
}

// checkErrorShape checks that err is Errors whose every *Error names file.
func checkErrorShape(t *testing.T, err error, file string) {
	t.Helper()
	var es Errors
	if !errors.As(err, &es) || len(es) == 0 {
		t.Fatalf("error %T %v is not a non-empty Errors", err, err)
	}
	for _, e := range es {
		if e.File != file {
			t.Errorf("error %q names file %q, want %q", e.Error(), e.File, file)
		}
	}
	var one *Error
	if !errors.As(err, &one) {
		t.Errorf("errors.As(*Error) failed on %v", err)
	}
}

func TestLoadFileMissing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope.toml")
	_, err := LoadFile(path, MapLookup(nil))
	want := path + ": cannot be read: no such file or directory"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
	checkErrorShape(t, err, path)
}

func TestParseInline(t *testing.T) {
	valid := `{
	  "fs": {"command": "fs-mcp", "args": ["--root", "${HOME}"], "cwd": "rel/dir", "env": {"K": "V"}, "required": true},
	  "web": {"url": "https://h/mcp", "bearer_token_env_var": "WEB_TOKEN", "tool_timeout_sec": 60}
	}`
	got, err := ParseInline(json.RawMessage(valid))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]*ServerConfig{
		// Inline config has no expansion and no file to resolve cwd against.
		"fs": {Name: "fs", Source: "initialize", Command: "fs-mcp", Args: []string{"--root", "${HOME}"},
			Cwd: "rel/dir", Env: map[string]string{"K": "V"}, Required: true},
		"web": {Name: "web", Source: "initialize", URL: "https://h/mcp", BearerTokenEnvVar: "WEB_TOKEN", ToolTimeoutSec: ptr(60.0)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	for _, empty := range []string{"", "null", " "} {
		got, err := ParseInline(json.RawMessage(empty))
		if err != nil || len(got) != 0 {
			t.Errorf("ParseInline(%q) = %v, %v; want empty", empty, got, err)
		}
	}

	errTests := []struct {
		in, want string
	}{
		{`{"s": {"url": "https://h/mcp", "bearer_token": "` + secret + `"}}`,
			`initialize: server "s": key "bearer_token": inline bearer tokens are refused; use bearer_token_env_var`},
		{`{"s": {"command": "x", "args": "x", "enabled_tools": [true]}}`,
			`initialize: server "s": key "args": expected an array of strings, got a string
initialize: server "s": key "enabled_tools[0]": expected a string, got a boolean`},
		{`{"bad.name": {"command": "x"}}`,
			`initialize: server "bad.name": invalid server name; use only letters, digits, '_' and '-'`},
		{`{"s": "npx server"}`,
			`initialize: server "s": expected an object of server settings, got a string`},
		{`["s"]`,
			`initialize: key "servers": expected an object mapping server names to settings`},
		{`{"s": `,
			`initialize: key "servers": invalid JSON at line 1, column 6: unexpected end of input`},
	}
	for _, tt := range errTests {
		_, err := ParseInline(json.RawMessage(tt.in))
		if err == nil {
			t.Errorf("ParseInline(%s) succeeded; want error", tt.in)
			continue
		}
		checkErrorShape(t, err, InlineSource)
		if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
			t.Errorf("ParseInline(%s) error (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestLoadOrder(t *testing.T) {
	dir := t.TempDir()
	user := writeFile(t, dir, "codex/config.toml", `
[mcp_servers.a]
command = "from-user"
[mcp_servers.b]
command = "from-user"
[mcp_servers.c]
command = "from-user"
`)
	project := writeFile(t, dir, "proj/.mcp.json", `{"mcpServers": {
	  "a": {"command": "from-project"},
	  "b": {"type": "ws", "url": "https://h/ws"}
	}}`)
	broken := writeFile(t, dir, "proj/.cursor/mcp.json", "{\n  \"mcpServers\": {,\n}")
	inline := json.RawMessage(`{"a": {"command": "from-inline"}, "d": {"command": "only-inline"}}`)

	l := Load(FileSources([]string{user, project, broken}), inline, MapLookup(nil))
	wantErrs := project + `: server "b": key "type": must be "stdio", "http", "streamable-http" or "sse"` + "\n" +
		broken + `: invalid JSON at line 2, column 18: invalid character ',' at start of value`
	if got := l.Errors.Error(); got != wantErrs {
		t.Errorf("errors:\n%s\nwant\n%s", got, wantErrs)
	}
	if e := l.Errors[1]; e.Line != 2 || e.Column != 18 {
		t.Errorf("parse error at line %d, column %d; want 2, 18", e.Line, e.Column)
	}
	commands := make(map[string]string)
	for name, c := range l.Servers {
		commands[name] = fmt.Sprintf("%s @ %s valid=%v", c.Command, c.Source, c.Valid())
	}
	// b's later definition is invalid: it replaces the earlier one, and
	// shows as invalid rather than running a stale definition.
	wantCommands := map[string]string{
		"a": "from-inline @ initialize valid=true",
		"b": " @ " + project + " valid=false",
		"c": "from-user @ " + user + " valid=true",
		"d": "only-inline @ initialize valid=true",
	}
	if diff := cmp.Diff(wantCommands, commands); diff != "" {
		t.Errorf("servers (-want +got):\n%s", diff)
	}
	var replaced []string
	for _, r := range l.Replaced {
		replaced = append(replaced, r.Server+": "+r.By.Path+" over "+r.Over.Path)
	}
	wantReplaced := []string{
		"a: " + project + " over " + user,
		"b: " + project + " over " + user,
		"a: initialize over " + project,
	}
	if diff := cmp.Diff(wantReplaced, replaced); diff != "" {
		t.Errorf("replaced (-want +got):\n%s", diff)
	}
	if len(l.Sources) != 4 || l.Sources[2].Err == nil || l.Sources[2].Err.Line != 2 {
		t.Errorf("sources: %+v", l.Sources)
	}
}

func TestValidate(t *testing.T) {
	ok := &ServerConfig{Name: "ok", Source: "f", Command: "x"}
	if err := Validate(ok); err != nil {
		t.Errorf("Validate(valid) = %v", err)
	}
	bad := &ServerConfig{Name: "", Source: "f", URL: "https://h/mcp", Args: []string{"a\x00"}, EnvVars: []string{""}}
	want := `f: empty server name
f: key "args": not supported for a streamable HTTP server (url); it applies only to stdio servers (command)
f: key "env_vars": not supported for a streamable HTTP server (url); it applies only to stdio servers (command)
f: key "args[0]": contains a NUL byte
f: key "env_vars[0]": invalid environment variable name`
	err := Validate(bad)
	if err == nil {
		t.Fatal("Validate(bad) = nil")
	}
	if diff := cmp.Diff(want, err.Error()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestChildEnv(t *testing.T) {
	env := MapLookup(map[string]string{
		"HOME":              "/home/u",
		"PATH":              "/usr/bin",
		"LANG":              "C.UTF-8",
		"TZ":                "UTC",
		"SECRET_TOKEN":      secret,
		"AWS_SECRET":        secret,
		"AWS_ACCESS_KEY_ID": "AKIA",
		"GITHUB_TOKEN":      "gh-token",
		"EXTRA":             "from-sidecar",
	})
	c := &ServerConfig{
		Command: "x",
		EnvVars: []string{"GITHUB_TOKEN", "EXTRA", "NOT_SET", "BAD=NAME"},
		Env:     map[string]string{"EXTRA": "from-config", "PATH": "/opt/bin", "NEW": "v"},
	}
	got := ChildEnv(c, env)
	want := []string{
		"EXTRA=from-config", // env wins over env_vars
		"GITHUB_TOKEN=gh-token",
		"HOME=/home/u",
		"LANG=C.UTF-8",
		"NEW=v",
		"PATH=/opt/bin", // env wins over the allowlist
		"TZ=UTC",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, kv := range got {
		if strings.Contains(kv, secret) || strings.HasPrefix(kv, "AWS_") || strings.HasPrefix(kv, "SECRET_TOKEN=") {
			t.Errorf("leaked %q", kv)
		}
	}

	// Nothing configured: only the allowlist.
	got = ChildEnv(&ServerConfig{Command: "x"}, env)
	want = []string{"HOME=/home/u", "LANG=C.UTF-8", "PATH=/usr/bin", "TZ=UTC"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("allowlist only (-want +got):\n%s", diff)
	}
}

func TestAllowedEnvIsFresh(t *testing.T) {
	a := AllowedEnv()
	a[0] = "SECRET_TOKEN"
	if b := AllowedEnv(); b[0] != "HOME" {
		t.Errorf("AllowedEnv shares its slice: %v", b)
	}
}

func TestServerConfigDefaults(t *testing.T) {
	c := &ServerConfig{}
	if c.StartupTimeout() != DefaultStartupTimeout || c.ToolTimeout() != DefaultToolTimeout ||
		c.Readiness() != ReadinessConnection || !c.IsEnabled() || c.Transport() != TransportStdio {
		t.Errorf("defaults wrong: %v %v %v %v %v", c.StartupTimeout(), c.ToolTimeout(), c.Readiness(), c.IsEnabled(), c.Transport())
	}
}

// TestParseErrorsQuoteNoSecret: a file named as a config that is not one
// (a token, a credentials file, a dotenv file) fails to parse, and its
// problem gives the line, the column and the kind of error, never the
// text: the file may be nothing but a secret.
func TestParseErrorsQuoteNoSecret(t *testing.T) {
	const secret = "Zm9vYmFyc2VjcmV0"
	for _, tc := range []struct{ name, body string }{
		{"JWT", "eyJhbGciOiJIUzI1NiJ9." + secret + ".c2ln\n"},
		{"API key", "sk-live-" + secret + "\n"},
		{"base64 with padding", secret + "==\n"},
		{"dotenv", "API_KEY=" + secret + "\n"},
		{"INI credentials", "[default]\naws_secret_access_key = " + secret + "/x+y\n"},
		{"bare value in JSON", `{"mcpServers": {"a": {"command": "x", "env": {"T": ` + secret + `}}}}`},
		{"PEM", "-----BEGIN PRIVATE KEY-----\n" + secret + "\n-----END PRIVATE KEY-----\n"},
		{"key of a TOML table", secret + " = [\n"},
	} {
		for _, name := range []string{"c.json", "c.toml", ".vscode/mcp.json", ".mcp.json"} {
			dir := t.TempDir()
			path := writeFile(t, dir, name, tc.body)
			_, err := LoadFile(path, MapLookup(nil))
			if err == nil {
				continue
			}
			msg := strings.ReplaceAll(err.Error(), path, "F")
			if strings.Contains(msg, secret[:6]) {
				t.Errorf("%s as %s: the problem quotes the file: %s", tc.name, name, msg)
			}
		}
	}
}

// TestHomeVariables: ${userHome} is the home folder as the editors find it
// (Node's os.homedir()): HOME, and on Windows, where HOME is seldom set,
// USERPROFILE.
func TestHomeVariables(t *testing.T) {
	for goos, want := range map[string][]string{"windows": {"HOME", "USERPROFILE"}, "linux": {"HOME"}, "darwin": {"HOME"}} {
		if diff := cmp.Diff(want, homeVariables(goos)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", goos, diff)
		}
	}
	x := &expander{syntax: syntaxVSCode, env: MapLookup(nil)}
	if _, problem := x.expand("${userHome}/x"); !strings.Contains(problem, "home folder is not set") {
		t.Errorf("without a home folder: problem %q", problem)
	}
}
