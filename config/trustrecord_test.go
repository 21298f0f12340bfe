package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// The sidecar's trust record approves a project's Cursor and VS Code files
// as they were when trusted: their servers run until the file changes, or
// the trust is revoked; the others stay to their own tools.
func TestTrustRecord(t *testing.T) {
	home, parent := t.TempDir(), t.TempDir()
	root := filepath.Join(parent, "repo")
	cwd := filepath.Join(root, "sub")
	if err := os.MkdirAll(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, root, ".mcp.json", `{"mcpServers": {"cl": {"command": "cl"}}}`)
	writeFile(t, root, ".cursor/mcp.json", `{"mcpServers": {"cu": {"command": "cu"}}}`)
	vscode := writeFile(t, cwd, ".vscode/mcp.json", `{"servers": {"vs": {"type": "stdio", "command": "vs"}}}`)
	env := MapLookup(map[string]string{"HOME": home})
	recordFile, ok := DefaultTrustFile(env)
	if !ok || recordFile != filepath.Join(home, ".config", "mcp-sidecar", "trust.json") {
		t.Fatalf("record file %q", recordFile)
	}
	load := func() *Loaded {
		found, _ := Discover(DiscoverOptions{Home: home, Cwd: cwd, Env: env})
		return Load(found, nil, env)
	}
	reasons := func(l *Loaded) map[string]string {
		out := map[string]string{}
		for _, u := range l.Untrusted {
			out[u.Server] = u.Reason
		}
		return out
	}
	if got := load().Names(); len(got) != 0 {
		t.Fatalf("before any trust, %v run", got)
	}

	// Trust the project as it is now.
	found, _ := Discover(DiscoverOptions{Home: home, Cwd: cwd, Env: env})
	rec, err := ReadTrustRecord(recordFile)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	got := rec.TrustProjectFiles(found, now)
	var trusted []string
	for _, tf := range got {
		if tf.Problem != "" {
			t.Errorf("%s: %s", tf.Source.Path, tf.Problem)
		}
		trusted = append(trusted, tf.Source.Tool+":"+strings.Join(tf.Servers, ","))
	}
	if diff := cmp.Diff([]string{"cursor:cu", "vscode:vs"}, trusted); diff != "" {
		t.Errorf("trusted (-want +got):\n%s", diff)
	}
	if err := rec.Write(recordFile); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(recordFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("record file: %v, %v", fi, err)
	}
	l := load()
	if diff := cmp.Diff([]string{"cu", "vs"}, l.Names()); diff != "" {
		t.Errorf("after trust, servers that run (-want +got):\n%s", diff)
	}
	if _, ok := reasons(l)["cl"]; !ok {
		t.Error("the Claude Code server ran on the sidecar's trust record")
	}

	// A changed file asks again; the other stays trusted.
	writeFile(t, cwd, ".vscode/mcp.json", `{"servers": {"vs": {"type": "stdio", "command": "vs", "args": ["--more"]}}}`)
	l = load()
	if diff := cmp.Diff([]string{"cu"}, l.Names()); diff != "" {
		t.Errorf("after a change, servers that run (-want +got):\n%s", diff)
	}
	if r := reasons(l)["vs"]; !strings.Contains(r, "the file changed since it was trusted with mcp-sidecar trust (2026-12-01)") {
		t.Errorf("reason of vs: %q", r)
	}
	if s := FileState(root, vscode, rec.Projects[realPath(root)].Files[realPath(vscode)]); s != "changed" {
		t.Errorf("state of the changed file: %q", s)
	}

	// Revoked: nothing runs.
	rec, _ = ReadTrustRecord(recordFile)
	if !rec.Revoke(root) || rec.Revoke(root) {
		t.Error("revoke: want true, then false")
	}
	if err := rec.Write(recordFile); err != nil {
		t.Fatal(err)
	}
	if got := load().Names(); len(got) != 0 {
		t.Errorf("after revoke, %v run", got)
	}
}

// A record others may write decides nothing: it is refused, and says so.
func TestTrustRecordRefusedWhenOthersMayWrite(t *testing.T) {
	home, root := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, root, ".vscode/mcp.json", `{"servers": {"vs": {"type": "stdio", "command": "vs"}}}`)
	env := MapLookup(map[string]string{"HOME": home})
	recordFile, _ := DefaultTrustFile(env)
	found, _ := Discover(DiscoverOptions{Home: home, Cwd: root, Env: env})
	rec, _ := ReadTrustRecord(recordFile)
	rec.TrustProjectFiles(found, time.Now())
	if err := rec.Write(recordFile); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(recordFile, 0o666); err != nil {
		t.Fatal(err)
	}
	found, _ = Discover(DiscoverOptions{Home: home, Cwd: root, Env: env})
	l := Load(found, nil, env)
	if len(l.Names()) != 0 || len(l.Untrusted) != 1 || !strings.Contains(l.Untrusted[0].Reason, "writable by group or others") {
		t.Errorf("servers %v, untrusted %+v", l.Names(), l.Untrusted)
	}
	if _, err := ReadTrustRecord(recordFile); err == nil || !strings.Contains(err.Error(), "is refused") {
		t.Errorf("ReadTrustRecord: %v", err)
	}
}

// TrustProjectFiles takes only Cursor and VS Code project files: the user
// and local scopes need no trust, Codex and Claude Code keep their own.
func TestTrustProjectFilesOnlyCursorAndVSCode(t *testing.T) {
	root := t.TempDir()
	rec := &TrustRecord{Projects: map[string]*TrustedProject{}}
	sources := []Source{
		{Path: writeFile(t, root, ".codex/config.toml", "[mcp_servers.x]\ncommand = \"x\"\n"), Tool: ToolCodex, Scope: ScopeProject, Format: FormatCodex, Root: root},
		{Path: writeFile(t, root, ".mcp.json", `{"mcpServers": {}}`), Tool: ToolClaude, Scope: ScopeProject, Format: FormatMCPServers, Root: root},
		{Path: writeFile(t, root, "home/.cursor/mcp.json", `{"mcpServers": {}}`), Tool: ToolCursor, Scope: ScopeUser, Format: FormatMCPServers, Root: root},
		{Path: writeFile(t, root, ".cursor/mcp.json", `{"mcpServers": {"c": {"command": "c"}}}`), Tool: ToolCursor, Scope: ScopeProject, Format: FormatMCPServers, Root: root},
	}
	got := rec.TrustProjectFiles(sources, time.Now())
	if len(got) != 1 || got[0].Source.Tool != ToolCursor || got[0].Source.Scope != ScopeProject {
		t.Fatalf("trusted %+v", got)
	}
	files := rec.Projects[realPath(root)].Files
	if diff := cmp.Diff([]string{realPath(sources[3].Path)}, keysOf(files), cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("recorded (-want +got):\n%s", diff)
	}
}

func keysOf[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
