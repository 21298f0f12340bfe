package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
)

// TestCmdTrust: trust records a project's Cursor and VS Code files as
// they are, so that their servers start from then on (doctor here, and any
// harness); a changed file asks again; --list shows it; --revoke forgets;
// --trust-project remembers those files the same way, and never a Claude
// Code file, which Claude Code approves.
func TestCmdTrust(t *testing.T) {
	isolate(t)
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	entry := func(name string) string {
		c := fixture.Config(name, fixture.Spec{ToolCount: 1})
		b, _ := json.Marshal(map[string]any{"command": c.Command, "args": c.Args, "env": c.Env})
		return string(b)
	}
	for rel, content := range map[string]string{
		".mcp.json":        `{"mcpServers": {"repo-srv": ` + entry("repo-srv") + `}}`,
		".cursor/mcp.json": `{"mcpServers": {"cursor-srv": ` + entry("cursor-srv") + `}}`,
		".vscode/mcp.json": `{"servers": {"vs-srv": ` + entry("vs-srv") + `}}`,
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(root, rel), content, 0o600)
	}
	t.Chdir(root)
	// states runs doctor --json: each server's status.
	states := func(args ...string) map[string]string {
		t.Helper()
		r := runCmd(t, nil, append([]string{"doctor", "--json"}, args...)...)
		var rep struct {
			Servers []struct{ Name, Status string }
		}
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("doctor --json: %v: %s", err, r)
		}
		out := map[string]string{}
		for _, s := range rep.Servers {
			out[s.Name] = s.Status
		}
		return out
	}
	untrusted := map[string]string{"cursor-srv": "untrusted", "repo-srv": "untrusted", "vs-srv": "untrusted"}
	trusted := map[string]string{"cursor-srv": "ready", "repo-srv": "untrusted", "vs-srv": "ready"}

	if r := runCmd(t, nil, "trust", "--list"); r.code != 0 || r.stdout != "No project is trusted.\n" {
		t.Errorf("trust --list before: %s", r)
	}
	if diff := cmp.Diff(untrusted, states()); diff != "" {
		t.Errorf("before trust (-want +got):\n%s", diff)
	}

	r := runCmd(t, nil, "trust")
	for _, want := range []string{
		"Trusted " + filepath.Join(root, ".cursor", "mcp.json") + " (Cursor, project scope) as it is now: server cursor-srv.\n",
		"Trusted " + filepath.Join(root, ".vscode", "mcp.json") + " (VS Code, project scope) as it is now: server vs-srv.\n",
		"A change to a file asks again; 'mcp-sidecar trust --revoke " + root + "' forgets.\n",
		"Not covered: approve the servers of " + filepath.Join(root, ".mcp.json") + " in Claude Code.\n",
	} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("trust: want exit 0 and %q: %s", want, r)
		}
	}
	if diff := cmp.Diff(trusted, states()); diff != "" {
		t.Errorf("after trust (-want +got):\n%s", diff)
	}
	if r := runCmd(t, nil, "trust", "--list"); !strings.Contains(r.stdout, root+"\n") || strings.Count(r.stdout, ": trusted\n") != 2 {
		t.Errorf("trust --list: %s", r)
	}

	// A changed file is not trusted until trusted again.
	vscode := filepath.Join(root, ".vscode", "mcp.json")
	writeFile(t, vscode, `{"servers": {"vs-srv": `+entry("vs-srv")+`, "new-srv": `+entry("new-srv")+`}}`, 0o600)
	changed := map[string]string{"cursor-srv": "ready", "repo-srv": "untrusted", "vs-srv": "untrusted", "new-srv": "untrusted"}
	if diff := cmp.Diff(changed, states()); diff != "" {
		t.Errorf("after a change (-want +got):\n%s", diff)
	}
	if r := runCmd(t, nil, "trust", "--list"); !strings.Contains(r.stdout, "changed since: not trusted until trusted again") {
		t.Errorf("trust --list after a change: %s", r)
	}

	// Revoked.
	if r := runCmd(t, nil, "trust", "--revoke"); r.code != 0 || !strings.Contains(r.stdout, "Forgot the trust of "+root) {
		t.Errorf("trust --revoke: %s", r)
	}
	untrusted["new-srv"] = "untrusted"
	if diff := cmp.Diff(untrusted, states()); diff != "" {
		t.Errorf("after revoke (-want +got):\n%s", diff)
	}

	// --trust-project runs all and remembers the Cursor and VS Code files.
	r = runCmd(t, nil, "doctor", "--trust-project")
	if !strings.Contains(r.stderr, "mcp-sidecar: trusted "+vscode+" as it is now (until it changes; 'mcp-sidecar trust --revoke' forgets)\n") {
		t.Errorf("doctor --trust-project does not say what it remembered: %s", r)
	}
	trusted["new-srv"] = "ready"
	if diff := cmp.Diff(trusted, states()); diff != "" {
		t.Errorf("after --trust-project (-want +got):\n%s", diff)
	}

	// A folder with nothing to trust.
	empty := t.TempDir()
	if r := runCmd(t, nil, "trust", empty); r.code != 1 || !strings.Contains(r.stderr, "no Cursor or VS Code file in "+empty) {
		t.Errorf("trust of an empty folder: %s", r)
	}
}
