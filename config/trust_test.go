package config

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestProjectTrust: the servers of a repository's own files run only when
// the user's recorded approval in the owning tool covers them, read from
// the tools' files as they write them in a temporary HOME: Codex's
// [projects."<dir>"] trust_level in ~/.codex/config.toml, Claude Code's
// enabledMcpjsonServers, disabledMcpjsonServers and
// enableAllProjectMcpServers in ~/.claude.json, ~/.claude/settings.json
// and (once its trust dialog was accepted) the project's .claude
// settings. Cursor and VS Code record nothing readable. The rest is found
// and reported with the reason, never decoded, and replaces nothing.
func TestProjectTrust(t *testing.T) {
	type untrusted struct {
		Server, Tool string
		Declined     bool
		Reason       string // a part of the reason
	}
	var (
		cxNone = untrusted{"cx", "codex", false, "Codex has not marked ROOT as a trusted project (in HOME/.codex/config.toml)"}
		cu     = untrusted{"cu", "cursor", false, "Cursor records no approval of project servers that mcp-sidecar can read"}
		vs     = untrusted{"vs", "vscode", false, "VS Code records no approval of project servers that mcp-sidecar can read"}
	)
	for _, tc := range []struct {
		name string
		// files to write, relative to HOME ("~/") or the repository
		// root ("./"); ROOT and MAIN in contents are replaced.
		files map[string]string
		// worktree makes the root a worktree of MAIN (see
		// makeWorktree); "" a repository of its own.
		worktree     string
		needsRoot    string // why the case needs root; skipped otherwise
		trustProject bool
		runs         []string
		untrusted    []untrusted
	}{
		{
			name: "nothing recorded",
			// A server no approval covers is never decoded: ${NOT_SET}
			// would otherwise be an error.
			files: map[string]string{"./.mcp.json": `{"mcpServers": {"a": {"command": "a"}, "b": {"command": "b"}, "c": {"command": "${NOT_SET}"}}}`},
			runs:  []string{"user-srv"},
			untrusted: []untrusted{
				cxNone,
				{"a", "claude", false, "not approved in Claude Code, whose trust dialog was not accepted for this project"},
				{"b", "claude", false, "not approved in Claude Code"},
				{"c", "claude", false, "not approved in Claude Code"},
				cu, vs,
			},
		},
		{
			name:  "Codex trusts the repository root",
			files: map[string]string{"~/.codex/config.toml": "[projects.\"ROOT\"]\ntrust_level = \"trusted\"\n\n[mcp_servers.user-srv]\ncommand = \"u\"\n"},
			runs:  []string{"cx", "user-srv"},
			untrusted: []untrusted{
				{"a", "claude", false, "not approved"}, {"b", "claude", false, "not approved"}, {"c", "claude", false, "not approved"}, cu, vs,
			},
		},
		{
			name:  "Codex marks it untrusted",
			files: map[string]string{"~/.codex/config.toml": "[projects.\"ROOT\"]\ntrust_level = \"untrusted\"\n"},
			untrusted: []untrusted{
				{"cx", "codex", false, `Codex has ROOT marked "untrusted" (in HOME/.codex/config.toml)`},
				{"a", "claude", false, "not approved"}, {"b", "claude", false, "not approved"}, {"c", "claude", false, "not approved"}, cu, vs,
			},
		},
		{
			name:     "Codex trusts the main checkout of a worktree",
			files:    map[string]string{"~/.codex/config.toml": "[projects.\"MAIN\"]\ntrust_level = \"trusted\"\n"},
			worktree: "linked",
			runs:     []string{"cx"},
			untrusted: []untrusted{
				{"a", "claude", false, "not approved"}, {"b", "claude", false, "not approved"}, {"c", "claude", false, "not approved"}, cu, vs,
			},
		},
		{
			name:     "Codex trusts the main checkout of a worktree linked with relative paths",
			files:    map[string]string{"~/.codex/config.toml": "[projects.\"MAIN\"]\ntrust_level = \"trusted\"\n"},
			worktree: "linked, relative",
			runs:     []string{"cx"},
			untrusted: []untrusted{
				{"a", "claude", false, "not approved"}, {"b", "claude", false, "not approved"}, {"c", "claude", false, "not approved"}, cu, vs,
			},
		},
		// A .git file anyone can write (an unpacked archive) that names a
		// trusted repository's worktree folder borrows nothing unless git
		// records that worktree as this checkout.
		{
			name:      "a .git file naming a worktree folder that does not exist borrows no trust",
			files:     map[string]string{"~/.codex/config.toml": "[projects.\"MAIN\"]\ntrust_level = \"trusted\"\n"},
			worktree:  "borrowed",
			untrusted: []untrusted{cxNone, {"a", "claude", false, "not approved"}, {"b", "claude", false, "not approved"}, {"c", "claude", false, "not approved"}, cu, vs},
		},
		{
			name:      "a .git file naming, relatively, a worktree folder that does not exist borrows no trust",
			files:     map[string]string{"~/.codex/config.toml": "[projects.\"MAIN\"]\ntrust_level = \"trusted\"\n"},
			worktree:  "borrowed, relative",
			untrusted: []untrusted{cxNone, {"a", "claude", false, "not approved"}, {"b", "claude", false, "not approved"}, {"c", "claude", false, "not approved"}, cu, vs},
		},
		{
			name:      "a .git file naming another checkout's worktree borrows no trust",
			files:     map[string]string{"~/.codex/config.toml": "[projects.\"MAIN\"]\ntrust_level = \"trusted\"\n"},
			worktree:  "borrowed, another checkout's",
			untrusted: []untrusted{cxNone, {"a", "claude", false, "not approved"}, {"b", "claude", false, "not approved"}, {"c", "claude", false, "not approved"}, cu, vs},
		},
		{
			name:      "a worktree folder of another user lends no trust",
			files:     map[string]string{"~/.codex/config.toml": "[projects.\"MAIN\"]\ntrust_level = \"trusted\"\n"},
			worktree:  "linked, another user's",
			needsRoot: "chown to another user needs root; the other worktree cases check the links without it",
			untrusted: []untrusted{cxNone, {"a", "claude", false, "not approved"}, {"b", "claude", false, "not approved"}, {"c", "claude", false, "not approved"}, cu, vs},
		},
		{
			name: "Claude Code approved one and declined one",
			files: map[string]string{"~/.claude.json": `{"numStartups": 4, "projects": {"ROOT": {"allowedTools": [], "hasTrustDialogAccepted": true,
				"enabledMcpjsonServers": ["a"], "disabledMcpjsonServers": ["b"], "mcpServers": {}}}}`},
			runs: []string{"a", "user-srv"},
			untrusted: []untrusted{
				cxNone,
				{"b", "claude", true, "declined in Claude Code (disabledMcpjsonServers)"},
				{"c", "claude", false, "not approved in Claude Code"},
				cu, vs,
			},
		},
		{
			name: "Claude Code's user settings approve every server of a project whose trust dialog was accepted",
			files: map[string]string{
				"~/.claude/settings.json": `{"enableAllProjectMcpServers": true}`,
				"~/.claude.json":          `{"projects": {"ROOT": {"hasTrustDialogAccepted": true}}}`,
			},
			runs:      []string{"a", "b", "c", "user-srv"},
			untrusted: []untrusted{cxNone, cu, vs},
		},
		{
			// Claude Code shows its trust dialog before it applies any
			// setting to a project, a blanket one of the user's included.
			name:  "Claude Code's user settings approve nothing of a project whose trust dialog was never accepted",
			files: map[string]string{"~/.claude/settings.json": `{"enableAllProjectMcpServers": true, "enabledMcpjsonServers": ["a"]}`},
			runs:  []string{"user-srv"},
			untrusted: []untrusted{
				cxNone,
				{"a", "claude", false, "trust dialog was not accepted"}, {"b", "claude", false, "trust dialog was not accepted"}, {"c", "claude", false, "trust dialog was not accepted"},
				cu, vs,
			},
		},
		{
			name:  "an approval in the project's entry of ~/.claude.json needs the trust dialog too",
			files: map[string]string{"~/.claude.json": `{"projects": {"ROOT": {"enabledMcpjsonServers": ["a"]}}}`},
			runs:  []string{"user-srv"},
			untrusted: []untrusted{
				cxNone,
				{"a", "claude", false, "trust dialog was not accepted"}, {"b", "claude", false, "not approved"}, {"c", "claude", false, "not approved"},
				cu, vs,
			},
		},
		{
			name:  "the project's own settings do not approve it before the trust dialog",
			files: map[string]string{"./.claude/settings.local.json": `{"enableAllProjectMcpServers": true, "enabledMcpjsonServers": ["a"]}`},
			runs:  []string{"user-srv"},
			untrusted: []untrusted{
				cxNone,
				{"a", "claude", false, "trust dialog was not accepted"}, {"b", "claude", false, "not approved"}, {"c", "claude", false, "not approved"},
				cu, vs,
			},
		},
		{
			name: "the project's settings count once the trust dialog was accepted (for a parent directory)",
			files: map[string]string{
				"./.claude/settings.local.json": `{"enabledMcpjsonServers": ["a", "c"]}`,
				"~/.claude.json":                `{"projects": {"PARENT": {"hasTrustDialogAccepted": true}}}`,
			},
			runs:      []string{"a", "c", "user-srv"},
			untrusted: []untrusted{cxNone, {"b", "claude", false, "not approved in Claude Code"}, cu, vs},
		},
		{
			name: "a decline in the project's settings counts against the user's blanket approval",
			files: map[string]string{
				"~/.claude/settings.json": `{"enableAllProjectMcpServers": true}`,
				"~/.claude.json":          `{"projects": {"ROOT": {"hasTrustDialogAccepted": true}}}`,
				"./.claude/settings.json": `{"disabledMcpjsonServers": ["c"]}`,
			},
			runs:      []string{"a", "b", "user-srv"},
			untrusted: []untrusted{cxNone, {"c", "claude", true, "declined"}, cu, vs},
		},
		{
			name: "a decline in the project's settings counts without the trust dialog",
			files: map[string]string{
				"~/.claude/settings.json": `{"enableAllProjectMcpServers": true}`,
				"./.claude/settings.json": `{"disabledMcpjsonServers": ["c"]}`,
			},
			runs: []string{"user-srv"},
			untrusted: []untrusted{cxNone,
				{"a", "claude", false, "trust dialog was not accepted"}, {"b", "claude", false, "trust dialog was not accepted"},
				{"c", "claude", true, "declined"}, cu, vs},
		},
		{
			name: "trusting the project runs all but what the user declined",
			files: map[string]string{"~/.claude.json": `{"projects": {"ROOT": {"disabledMcpjsonServers": ["b"]}}}`,
				"~/.codex/config.toml": "[projects.\"ROOT\"]\ntrust_level = \"untrusted\"\n"},
			trustProject: true,
			runs:         []string{"a", "c", "cu", "cx", "vs"}, // the user's Codex file is replaced
			untrusted:    []untrusted{{"b", "claude", true, "declined"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.needsRoot != "" && os.Geteuid() != 0 {
				t.Skip(tc.needsRoot)
			}
			home, parent := t.TempDir(), t.TempDir()
			root := filepath.Join(parent, "repo")
			cwd := filepath.Join(root, "sub")
			main := filepath.Join(parent, "main")
			if err := os.MkdirAll(cwd, 0o755); err != nil {
				t.Fatal(err)
			}
			if tc.worktree != "" {
				makeWorktree(t, tc.worktree, main, root)
			} else if err := os.MkdirAll(filepath.Join(root, ".git"), 0o755); err != nil {
				t.Fatal(err)
			}
			expand := strings.NewReplacer("ROOT", root, "MAIN", main, "PARENT", parent, "HOME", home).Replace
			files := map[string]string{
				"~/.codex/config.toml": "[mcp_servers.user-srv]\ncommand = \"u\"\n",
				"./.mcp.json":          `{"mcpServers": {"a": {"command": "a"}, "b": {"command": "b"}, "c": {"command": "c"}}}`,
				"./.codex/config.toml": "[mcp_servers.cx]\ncommand = \"cx\"\n",
				"./.cursor/mcp.json":   `{"mcpServers": {"cu": {"command": "cu"}}}`,
				"./.vscode/mcp.json":   `{"servers": {"vs": {"type": "stdio", "command": "vs"}}}`,
			}
			for k, v := range tc.files {
				files[k] = v
			}
			for rel, content := range files {
				dir := root
				if r, ok := strings.CutPrefix(rel, "~/"); ok {
					dir, rel = home, r
				}
				writeFile(t, dir, strings.TrimPrefix(rel, "./"), expand(content))
			}
			env := MapLookup(map[string]string{"HOME": home})
			found, _ := Discover(DiscoverOptions{Home: home, Cwd: cwd, Env: env, TrustProject: tc.trustProject})
			l := Load(found, nil, env)
			if len(l.Errors) > 0 || len(l.Warnings) > 0 {
				t.Errorf("errors %v, warnings %v", l.Errors, l.Warnings)
			}
			if diff := cmp.Diff(tc.runs, l.Names(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("servers that run (-want +got):\n%s", diff)
			}
			var got []untrusted
			for _, u := range l.Untrusted {
				if u.Source.Scope != ScopeProject {
					t.Errorf("%s: untrusted in scope %s", u.Server, u.Source.Scope)
				}
				got = append(got, untrusted{u.Server, u.Source.Tool, u.Declined, u.Reason})
			}
			var want []untrusted
			for _, u := range tc.untrusted {
				u.Reason = expand(u.Reason)
				want = append(want, u)
			}
			contains := cmp.Comparer(func(a, b untrusted) bool {
				return a.Server == b.Server && a.Tool == b.Tool && a.Declined == b.Declined &&
					(strings.Contains(a.Reason, b.Reason) || strings.Contains(b.Reason, a.Reason))
			})
			if diff := cmp.Diff(want, got, contains); diff != "" {
				t.Errorf("untrusted (-want +got):\n%s", diff)
			}
		})
	}
}

// makeWorktree makes root a worktree of the repository main, as git
// records one (main/.git/worktrees/repo holding a gitdir file that names
// root/.git, root/.git naming that folder), or as only a .git file anyone
// can write claims one:
//
//   - "linked": as git writes it, with absolute paths;
//   - "linked, relative": with relative paths (worktree.useRelativePaths);
//   - "linked, another user's": linked, the worktree folder another user's;
//   - "borrowed", "borrowed, relative": root/.git names the folder, which
//     does not exist;
//   - "borrowed, another checkout's": the folder exists and names another
//     checkout's .git.
func makeWorktree(t *testing.T, how, main, root string) {
	t.Helper()
	admin := filepath.Join(main, ".git", "worktrees", "repo")
	if err := os.MkdirAll(filepath.Join(main, ".git", "worktrees"), 0o755); err != nil {
		t.Fatal(err)
	}
	rel := func(from, to string) string {
		r, err := filepath.Rel(from, to)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	switch how {
	case "linked", "linked, another user's":
		writeFile(t, admin, "gitdir", filepath.Join(root, ".git")+"\n")
		writeFile(t, root, ".git", "gitdir: "+admin+"\n")
		if how == "linked, another user's" {
			if err := os.Chown(admin, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}
	case "linked, relative":
		writeFile(t, admin, "gitdir", rel(admin, filepath.Join(root, ".git"))+"\n")
		writeFile(t, root, ".git", "gitdir: "+rel(root, admin)+"\n")
	case "borrowed":
		writeFile(t, root, ".git", "gitdir: "+admin+"\n")
	case "borrowed, relative":
		writeFile(t, root, ".git", "gitdir: "+rel(root, admin)+"\n")
	case "borrowed, another checkout's":
		other := filepath.Join(filepath.Dir(main), "other")
		writeFile(t, other, ".git", "gitdir: "+admin+"\n")
		writeFile(t, admin, "gitdir", filepath.Join(other, ".git")+"\n")
		writeFile(t, root, ".git", "gitdir: "+admin+"\n")
	default:
		t.Fatalf("unknown worktree %q", how)
	}
}

// TestUntrustedReplacesNothing: a project server no approval covers does
// not replace the user's own definition of that name, as in Claude Code,
// which drops unapproved project servers before it merges the scopes.
func TestUntrustedReplacesNothing(t *testing.T) {
	home, root := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, home, ".claude.json", `{"mcpServers": {"github": {"type": "stdio", "command": "mine"}}}`)
	writeFile(t, root, ".mcp.json", `{"mcpServers": {"github": {"command": "theirs"}}}`)
	found, _ := Discover(DiscoverOptions{Home: home, Cwd: root})
	l := Load(found, nil, MapLookup(nil))
	if c := l.Servers["github"]; c == nil || c.Command != "mine" || c.Origin.Scope != ScopeUser {
		t.Errorf("github = %+v", c)
	}
	if len(l.Replaced) != 0 || len(l.Untrusted) != 1 {
		t.Errorf("replaced %v, untrusted %v", l.Replaced, l.Untrusted)
	}
	want := []SourceReport{
		{Source: found[0], Servers: []string{"github"}},
		{Source: found[1], Servers: []string{}, Untrusted: []string{"github"}},
	}
	if diff := cmp.Diff(want, l.Sources, cmp.Comparer(func(a, b *Trust) bool { return a == b })); diff != "" {
		t.Errorf("sources (-want +got):\n%s", diff)
	}
}

// TestCodexTrustOfARealWorktree: a worktree made by git itself lends the
// main checkout's Codex trust to its .codex/config.toml; a copy of its
// .git file elsewhere (as an archive of it would unpack) lends nothing.
func TestCodexTrustOfARealWorktree(t *testing.T) {
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	base, home := t.TempDir(), t.TempDir()
	main, wt, copied := filepath.Join(base, "main"), filepath.Join(base, "wt"), filepath.Join(base, "unpacked")
	git := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command(gitBin, append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"}, args...)...)
		cmd.Dir = dir
		cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=1"}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git(base, "init", "-q", main)
	git(main, "commit", "-q", "--allow-empty", "-m", "init")
	git(main, "worktree", "add", "-q", wt)
	dotGit, err := os.ReadFile(filepath.Join(wt, ".git"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, copied, ".git", string(dotGit))
	for _, dir := range []string{wt, copied} {
		writeFile(t, dir, ".codex/config.toml", "[mcp_servers.cx]\ncommand = \"cx\"\n")
	}
	writeFile(t, home, ".codex/config.toml", "[projects.\""+main+"\"]\ntrust_level = \"trusted\"\n")

	for _, tc := range []struct {
		cwd  string
		runs []string
	}{{wt, []string{"cx"}}, {copied, nil}} {
		found, _ := Discover(DiscoverOptions{Home: home, Cwd: tc.cwd, Tools: []string{ToolCodex}})
		l := Load(found, nil, MapLookup(nil))
		if diff := cmp.Diff(tc.runs, l.Names(), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("in %s, servers that run (-want +got):\n%s", tc.cwd, diff)
		}
	}
}
