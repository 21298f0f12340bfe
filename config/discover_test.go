package config

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
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
	// The project's files are trusted here (TestProjectTrust is about
	// what is not).
	found, looked := Discover(DiscoverOptions{Home: home, Cwd: cwd, Env: env, TrustProject: true})
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
	// Claude Code's legacy SSE server is valid, a remote server over SSE.
	if s := l.Servers["sentry"]; !s.Valid() || !s.SSE || s.Transport() != TransportHTTP {
		t.Errorf("sentry: %+v", s)
	}
	if len(l.Errors) != 0 || len(l.Valid()) != 6 {
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

// TestDiscoverCodexUserFile: the Codex config.toml with every key of
// Codex's reference is found where Codex looks for it, ~/.codex in a
// temporary HOME or $CODEX_HOME when set, and loads exactly as the same
// file named explicitly.
func TestDiscoverCodexUserFile(t *testing.T) {
	for _, tc := range []struct {
		name      string
		codexHome bool
	}{
		{"~/.codex/config.toml", false},
		{"$CODEX_HOME/config.toml", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			vars := testEnv()
			vars["HOME"] = home
			dir := filepath.Join(home, ".codex")
			if tc.codexHome {
				dir = t.TempDir()
				vars["CODEX_HOME"] = dir
				// Codex reads only $CODEX_HOME then: a ~/.codex beside it is not looked at.
				writeFile(t, home, ".codex/config.toml", "[mcp_servers.stale]\ncommand = \"x\"\n")
			}
			path := writeFile(t, dir, "config.toml", everyCodexKey)
			env := MapLookup(vars)
			cwd := t.TempDir()
			found, _ := Discover(DiscoverOptions{Home: home, Cwd: cwd, Env: env})
			want := []Source{{Path: path, Format: FormatCodex, Tool: ToolCodex, Scope: ScopeUser, Root: cwd}}
			if diff := cmp.Diff(want, found); diff != "" {
				t.Fatalf("found (-want +got):\n%s", diff)
			}
			l := Load(found, nil, env)
			if len(l.Errors) > 0 || len(l.Warnings) > 0 {
				t.Fatalf("errors %v, warnings %v", l.Errors, l.Warnings)
			}
			byPath := Load(FileSources([]string{path}), nil, env)
			ignoreOrigin := cmpopts.IgnoreFields(ServerConfig{}, "Origin")
			if diff := cmp.Diff(byPath.Servers, l.Servers, ignoreOrigin); diff != "" {
				t.Errorf("discovered differs from loaded by path (-path +discovered):\n%s", diff)
			}
			if got := l.Names(); !slices.Equal(got, []string{"docs", "github"}) {
				t.Errorf("servers %v", got)
			}
		})
	}
}

// TestDiscoverCursorProjectTwoUp: a project's .cursor/mcp.json two
// directories above the working directory, as Cursor's documentation
// writes one (a stdio server with ${env:...} and ${workspaceFolder}, and a
// remote one with headers), is found in the project scope and loads with
// the repository root as the workspace folder.
func TestDiscoverCursorProjectTwoUp(t *testing.T) {
	home, root := t.TempDir(), t.TempDir()
	cwd := filepath.Join(root, "packages", "web")
	if err := os.MkdirAll(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	path := writeFile(t, root, ".cursor/mcp.json", `{
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "${workspaceFolder}"],
      "env": {"API_KEY": "${env:CURSOR_TEST_KEY}"}
    },
    "remote": {
      "url": "https://mcp.example.com/mcp",
      "headers": {"Authorization": "Bearer ${env:CURSOR_TEST_KEY}"}
    }
  }
}`)
	env := MapLookup(map[string]string{"HOME": home, "CURSOR_TEST_KEY": "k-123"})
	found, _ := Discover(DiscoverOptions{Home: home, Cwd: cwd, Env: env, Tools: []string{ToolCursor}, TrustProject: true})
	if len(found) != 1 || found[0].Path != path || found[0].Scope != ScopeProject || found[0].Tool != ToolCursor {
		t.Fatalf("found %+v, want %s in Cursor's project scope", found, path)
	}
	l := Load(found, nil, env)
	if len(l.Errors) > 0 || len(l.Warnings) > 0 {
		t.Fatalf("errors %v, warnings %v", l.Errors, l.Warnings)
	}
	fs, remote := l.Servers["filesystem"], l.Servers["remote"]
	if fs == nil || remote == nil {
		t.Fatalf("servers %v", l.Names())
	}
	if diff := cmp.Diff([]string{"-y", "@modelcontextprotocol/server-filesystem", root}, fs.Args); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
	if fs.Env["API_KEY"] != "k-123" || remote.HTTPHeaders["Authorization"] != "Bearer k-123" {
		t.Errorf("env %v, headers %v", fs.Env, remote.HTTPHeaders)
	}
}

// TestVSCodeUserFile: VS Code's user mcp.json is in the folder of its user
// settings on each platform, and is found there.
func TestVSCodeUserFile(t *testing.T) {
	home := "/home/u"
	for _, tc := range []struct {
		goos string
		env  map[string]string
		want string
	}{
		{"windows", map[string]string{"APPDATA": "/roam"}, filepath.Join("/roam", "Code", "User", "mcp.json")},
		{"windows", nil, filepath.Join(home, "AppData", "Roaming", "Code", "User", "mcp.json")},
		{"darwin", nil, filepath.Join(home, "Library", "Application Support", "Code", "User", "mcp.json")},
		{"linux", nil, filepath.Join(home, ".config", "Code", "User", "mcp.json")},
		{"linux", map[string]string{"XDG_CONFIG_HOME": "/xdg"}, filepath.Join("/xdg", "Code", "User", "mcp.json")},
		{"linux", map[string]string{"XDG_CONFIG_HOME": "relative"}, filepath.Join(home, ".config", "Code", "User", "mcp.json")},
	} {
		if got := vscodeUserFile(tc.goos, home, MapLookup(tc.env)); got != tc.want {
			t.Errorf("%s %v: %s, want %s", tc.goos, tc.env, got, tc.want)
		}
	}

	// On this platform, in a temporary HOME, as VS Code writes the file
	// (MCP: Open User Configuration): JSONC, servers and inputs.
	home = t.TempDir()
	env := MapLookup(map[string]string{"HOME": home, "APPDATA": filepath.Join(home, "AppData", "Roaming")})
	path := vscodeUserFile(runtime.GOOS, home, env)
	writeFile(t, filepath.Dir(path), "mcp.json", `{
	"servers": {
		// added with MCP: Add Server
		"fetch": {"type": "stdio", "command": "uvx", "args": ["mcp-server-fetch"]},
	},
	"inputs": []
}`)
	cwd := t.TempDir()
	found, _ := Discover(DiscoverOptions{Home: home, Cwd: cwd, Env: env, Tools: []string{ToolVSCode}})
	want := []Source{{Path: path, Format: FormatVSCode, Tool: ToolVSCode, Scope: ScopeUser, Root: cwd}}
	if diff := cmp.Diff(want, found); diff != "" {
		t.Fatalf("found (-want +got):\n%s", diff)
	}
	l := Load(found, nil, env)
	if c := l.Servers["fetch"]; c == nil || !c.Valid() || c.Command != "uvx" || len(l.Warnings) > 0 {
		t.Errorf("fetch %+v; warnings %v", c, l.Warnings)
	}
}

// TestWorkspaceFolderOfUserFiles: ${workspaceFolder} in a user-scope file
// (Cursor's ~/.cursor/mcp.json, VS Code's user mcp.json, ~/.claude.json)
// is the project the discovery is made in, as the editors resolve it to
// the folder open: never the folder of the file, HOME, which would hand a
// filesystem server the whole home folder.
func TestWorkspaceFolderOfUserFiles(t *testing.T) {
	home, root := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	cwd := filepath.Join(root, "sub")
	if err := os.Mkdir(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	env := MapLookup(map[string]string{"HOME": home, "APPDATA": filepath.Join(home, "AppData", "Roaming")})
	server := func(name string) string {
		return `"` + name + `": {"command": "fs", "args": ["${workspaceFolder}", "${workspaceFolderBasename}"]}`
	}
	writeFile(t, home, ".cursor/mcp.json", `{"mcpServers": {`+server("cursor")+`}}`)
	writeFile(t, filepath.Dir(vscodeUserFile(runtime.GOOS, home, env)), "mcp.json", `{"servers": {`+server("vscode")+`}}`)
	writeFile(t, home, ".claude.json", `{"mcpServers": {`+server("claude")+`}}`)

	found, _ := Discover(DiscoverOptions{Home: home, Cwd: cwd, Env: env})
	l := Load(found, nil, env)
	if len(l.Errors) > 0 {
		t.Fatalf("errors: %v", l.Errors)
	}
	got := map[string][]string{}
	for name, c := range l.Servers {
		got[name] = c.Args
	}
	want := []string{root, filepath.Base(root)}
	if diff := cmp.Diff(map[string][]string{"cursor": want, "vscode": want, "claude": want}, got); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
}
