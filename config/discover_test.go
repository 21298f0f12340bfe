package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// homeAndProject lays out a temporary HOME and a repository with a
// working directory two levels below its root, with every tool's files
// written as the tool writes them.
func homeAndProject(t *testing.T) (home, root, cwd string) {
	t.Helper()
	home, root = t.TempDir(), t.TempDir()
	cwd = filepath.Join(root, "services", "api")
	if err := os.MkdirAll(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	// Codex, user scope (what `codex mcp add docs -- npx -y docs-mcp` writes).
	writeFile(t, home, ".codex/config.toml", `model = "gpt-5"

[mcp_servers.docs]
command = "npx"
args = ["-y", "docs-mcp"]

[mcp_servers.shared]
command = "from-codex-user"
`)
	// Claude Code: ~/.claude.json holds the user scope at the top level and
	// the local scope under projects, keyed by the absolute project path
	// (what `claude mcp add --scope user` and `claude mcp add` write).
	writeFile(t, home, ".claude.json", fmt.Sprintf(`{
  "numStartups": 12,
  "installMethod": "npm",
  "mcpServers": {
    "shared": {"type": "stdio", "command": "from-claude-user", "args": [], "env": {}}
  },
  "projects": {
    %q: {
      "allowedTools": [],
      "mcpServers": {
        "local-only": {"type": "stdio", "command": "local-cmd", "args": [], "env": {}},
        "shared": {"type": "http", "url": "https://local.example.com/mcp"}
      },
      "hasTrustDialogAccepted": true
    },
    "/some/other/project": {
      "mcpServers": {"elsewhere": {"type": "stdio", "command": "x", "args": [], "env": {}}}
    }
  }
}`, root))
	// Cursor, user scope.
	writeFile(t, home, ".cursor/mcp.json", `{"mcpServers": {"linear": {"url": "https://mcp.linear.app/mcp"}}}`)
	// Claude Code project scope at the repository root, two levels up
	// (what `claude mcp add --scope project` writes).
	writeFile(t, root, ".mcp.json", `{
  "mcpServers": {
    "shared": {"type": "stdio", "command": "from-project-root", "args": [], "env": {}},
    "sentry": {"type": "sse", "url": "https://mcp.sentry.dev/sse"}
  }
}`)
	// VS Code, in the working directory: JSONC.
	writeFile(t, cwd, ".vscode/mcp.json", `{
  // servers of this service
  "servers": {
    "api-db": {"type": "stdio", "command": "db-mcp", "args": ["${workspaceFolder}"],},
  },
}`)
	// Codex project scope in the working directory.
	writeFile(t, cwd, ".codex/config.toml", "[mcp_servers.docs]\ncommand = \"docs-from-project\"\n")
	return home, root, cwd
}

func TestDiscoverFindsEveryTool(t *testing.T) {
	home, root, cwd := homeAndProject(t)
	env := MapLookup(map[string]string{"HOME": home})
	found, looked := Discover(DiscoverOptions{Home: home, Cwd: cwd, Env: env})
	var got []string
	for _, s := range found {
		got = append(got, s.Describe())
	}
	want := []string{
		filepath.Join(home, ".codex/config.toml") + " (Codex, user scope)",
		filepath.Join(home, ".claude.json") + " (Claude Code, user scope)",
		filepath.Join(home, ".cursor/mcp.json") + " (Cursor, user scope)",
		filepath.Join(root, ".mcp.json") + " (Claude Code, project scope)",
		filepath.Join(cwd, ".codex/config.toml") + " (Codex, project scope)",
		filepath.Join(cwd, ".vscode/mcp.json") + " (VS Code, project scope)",
		filepath.Join(home, ".claude.json") + " (Claude Code, local scope, project " + root + ")",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("found (-want +got):\n%s", diff)
	}
	// Looked also covers the directories between root and cwd.
	if !strings.Contains(fmt.Sprint(looked), filepath.Join(root, "services", ".mcp.json")) {
		t.Errorf("looked does not cover %s: %v", filepath.Join(root, "services"), looked)
	}

	l := Load(found, nil, env)
	origins := map[string]string{}
	for name, c := range l.Servers {
		origins[name] = c.Origin.Describe()
	}
	wantOrigins := map[string]string{
		"docs":       filepath.Join(cwd, ".codex/config.toml") + " (Codex, project scope)",
		"linear":     filepath.Join(home, ".cursor/mcp.json") + " (Cursor, user scope)",
		"sentry":     filepath.Join(root, ".mcp.json") + " (Claude Code, project scope)",
		"api-db":     filepath.Join(cwd, ".vscode/mcp.json") + " (VS Code, project scope)",
		"local-only": filepath.Join(home, ".claude.json") + " (Claude Code, local scope, project " + root + ")",
		"shared":     filepath.Join(home, ".claude.json") + " (Claude Code, local scope, project " + root + ")",
	}
	if diff := cmp.Diff(wantOrigins, origins); diff != "" {
		t.Errorf("origins (-want +got):\n%s", diff)
	}
	// Local scope beats project beats user: shared went codex user ->
	// claude user -> project -> local.
	if c := l.Servers["shared"]; c.URL != "https://local.example.com/mcp" {
		t.Errorf("shared = %+v", c)
	}
	if c := l.Servers["docs"]; c.Command != "docs-from-project" {
		t.Errorf("docs = %+v", c)
	}
	if c := l.Servers["api-db"]; !c.Valid() || c.Args[0] != cwd {
		t.Errorf("api-db = %+v", c)
	}
	var replaced []string
	for _, r := range l.Replaced {
		replaced = append(replaced, r.Server+": "+r.Over.Tool+"/"+r.Over.Scope+" -> "+r.By.Tool+"/"+r.By.Scope)
	}
	wantReplaced := []string{
		"shared: codex/user -> claude/user",
		"shared: claude/user -> claude/project",
		"docs: codex/user -> codex/project",
		"shared: claude/project -> claude/local",
	}
	if diff := cmp.Diff(wantReplaced, replaced); diff != "" {
		t.Errorf("replaced (-want +got):\n%s", diff)
	}
	// Claude Code's SSE server is invalid with a structured error; the
	// rest are valid.
	if s := l.Servers["sentry"]; s.Valid() || s.Problems[0].Key != "type" || s.Problems[0].File != filepath.Join(root, ".mcp.json") {
		t.Errorf("sentry: %+v", s)
	}
	if len(l.Errors) != 1 || len(l.Valid()) != 5 {
		t.Errorf("errors %v; valid %d", l.Errors, len(l.Valid()))
	}
}

func TestDiscoverOptions(t *testing.T) {
	home, _, cwd := homeAndProject(t)
	codexHome := t.TempDir()
	writeFile(t, codexHome, "config.toml", "[mcp_servers.ch]\ncommand = \"x\"\n")
	env := MapLookup(map[string]string{"HOME": home, "CODEX_HOME": codexHome})
	found, _ := Discover(DiscoverOptions{Home: home, Cwd: cwd, Env: env, Tools: []string{ToolCodex}})
	var got []string
	for _, s := range found {
		got = append(got, s.Path)
	}
	// CODEX_HOME replaces ~/.codex; only Codex's files are read.
	want := []string{filepath.Join(codexHome, "config.toml"), filepath.Join(cwd, ".codex/config.toml")}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	// Outside a repository only the working directory is searched.
	plain := t.TempDir()
	sub := filepath.Join(plain, "sub")
	writeFile(t, plain, ".mcp.json", `{"mcpServers": {}}`)
	writeFile(t, sub, ".mcp.json", `{"mcpServers": {}}`)
	found, _ = Discover(DiscoverOptions{Cwd: sub, Tools: []string{ToolClaude}})
	if len(found) != 1 || found[0].Path != filepath.Join(sub, ".mcp.json") {
		t.Errorf("outside a repository: %v", found)
	}
}
