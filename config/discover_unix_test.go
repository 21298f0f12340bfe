//go:build unix

package config

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDiscoverReportsWhatIsNotAFile: a FIFO, a directory, a symbolic link
// loop, a link to nothing or to a device where a config file belongs are
// found, and each is a problem of that file (as when the host names it),
// read without blocking and without reading the device; the good files
// around them still load. Before, discovery skipped them silently.
func TestDiscoverReportsWhatIsNotAFile(t *testing.T) {
	home, root := t.TempDir(), t.TempDir()
	cwd := filepath.Join(root, "a")
	for _, dir := range []string{filepath.Join(root, ".git"), filepath.Join(cwd, ".cursor"), filepath.Join(cwd, ".vscode", "mcp.json"), filepath.Join(cwd, ".codex"), filepath.Join(home, ".cursor")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	fifo := filepath.Join(root, ".mcp.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	loop := filepath.Join(cwd, ".cursor", "mcp.json")
	dangling := filepath.Join(cwd, ".codex", "config.toml")
	device := filepath.Join(home, ".cursor", "mcp.json")
	for link, target := range map[string]string{loop: "mcp.json", dangling: "missing.toml", device: "/dev/zero"} {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	good := writeFile(t, cwd, ".mcp.json", `{"mcpServers": {"good": {"command": "echo"}}}`)
	// A path through a file is nothing there: .cursor is a file here.
	writeFile(t, root, ".cursor", "")

	found, _ := Discover(DiscoverOptions{Home: home, Cwd: cwd, TrustProject: true})
	var paths []string
	for _, s := range found {
		paths = append(paths, s.Path)
	}
	dir := filepath.Join(cwd, ".vscode", "mcp.json")
	want := []string{device, fifo, dangling, good, loop, dir}
	if diff := cmp.Diff(want, paths); diff != "" {
		t.Fatalf("found (-want +got):\n%s", diff)
	}

	l := Load(found, nil, MapLookup(nil))
	if diff := cmp.Diff([]string{"good"}, l.Names()); diff != "" {
		t.Errorf("servers (-want +got):\n%s", diff)
	}
	var problems []string
	for _, s := range l.Sources {
		if s.Err != nil {
			problems = append(problems, s.Err.Error())
		}
	}
	wantProblems := []string{
		device + ": not a regular file (a device)",
		fifo + ": not a regular file (a FIFO)",
		dangling + ": cannot be read: no such file or directory",
		loop + ": cannot be read: too many levels of symbolic links",
		dir + ": not a regular file (a directory)",
	}
	if diff := cmp.Diff(wantProblems, problems); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	if len(l.Errors) != len(wantProblems) {
		t.Errorf("errors: %v", l.Errors)
	}
}

// TestAnotherUsersFilesAreIgnored: in a folder others may write (/tmp), a
// .git and project files another user put there make no repository of the
// folders below it and are not read: a .git of another user is no
// repository root, and a config file of another user is a problem of that
// file, never read, even in the working directory. The user's approvals
// of their own project (Codex's trust, Claude Code's blanket approval)
// cover none of it.
func TestAnotherUsersFilesAreIgnored(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making another user's files needs root (chown); files of the user and root, the only others a test can make, are accepted")
	}
	const nobody = 65534
	home, shared := t.TempDir(), t.TempDir()
	if err := os.Chmod(shared, os.ModeSticky|0o777); err != nil {
		t.Fatal(err)
	}
	cwd := filepath.Join(shared, "victim")
	if err := os.Mkdir(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	planted := []string{
		writeFile(t, shared, ".codex/config.toml", "[mcp_servers.planted-codex]\ncommand = \"evil\"\n"),
		writeFile(t, shared, ".mcp.json", `{"mcpServers": {"planted-claude": {"command": "evil"}}}`),
		writeFile(t, shared, ".git/HEAD", "ref: refs/heads/main\n"),
		filepath.Join(shared, ".git"), filepath.Join(shared, ".codex"),
	}
	// One in the working directory itself, another user's too.
	inCwd := writeFile(t, cwd, ".mcp.json", `{"mcpServers": {"planted-here": {"command": "evil"}}}`)
	planted = append(planted, inCwd)
	for _, p := range planted {
		if err := os.Lchown(p, nobody, nobody); err != nil {
			t.Fatal(err)
		}
	}
	// The user trusts their own project in Codex and approves every
	// .mcp.json server of it in Claude Code.
	writeFile(t, home, ".codex/config.toml", "[projects.\""+cwd+"\"]\ntrust_level = \"trusted\"\n")
	writeFile(t, home, ".claude/settings.json", `{"enableAllProjectMcpServers": true}`)
	writeFile(t, home, ".claude.json", `{"projects": {"`+cwd+`": {"hasTrustDialogAccepted": true}}}`)

	found, _ := Discover(DiscoverOptions{Home: home, Cwd: cwd})
	l := Load(found, nil, MapLookup(nil))
	if len(l.Servers) != 0 || len(l.Untrusted) != 0 {
		t.Errorf("servers %v, untrusted %v: want none of another user's", l.Names(), l.Untrusted)
	}
	var read []string
	for _, s := range l.Sources {
		if s.Scope == ScopeProject {
			read = append(read, s.Path)
		}
	}
	if diff := cmp.Diff([]string{inCwd}, read); diff != "" {
		t.Errorf("project files considered (-want +got):\n%s", diff)
	}
	want := inCwd + ": owned by uid 65534, not by the current user (uid 0) or root"
	if len(l.Errors) != 1 || l.Errors[0].Error() != want {
		t.Errorf("errors %v, want one: %s", l.Errors, want)
	}
}

// TestProjectEnteredThroughALink: Claude Code keys ~/.claude.json's
// projects by the real path of its working directory; a project whose
// path the host gives through a link keeps its local-scope servers, its
// trust dialog and its approvals, and so does one recorded under the
// link's spelling.
func TestProjectEnteredThroughALink(t *testing.T) {
	for _, keyedBy := range []string{"real path", "link"} {
		t.Run(keyedBy, func(t *testing.T) {
			home, base := t.TempDir(), t.TempDir()
			real := filepath.Join(base, "real")
			link := filepath.Join(base, "link")
			if err := os.MkdirAll(filepath.Join(real, ".git"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(real, link); err != nil {
				t.Fatal(err)
			}
			writeFile(t, real, ".mcp.json", `{"mcpServers": {"approved": {"command": "a"}, "other": {"command": "b"}}}`)
			key := real
			if keyedBy == "link" {
				key = link
			}
			writeFile(t, home, ".claude.json", `{"projects": {"`+key+`": {"hasTrustDialogAccepted": true,
				"enabledMcpjsonServers": ["approved"], "mcpServers": {"local": {"command": "l"}}}}}`)
			cwd := filepath.Join(link, "sub")
			if err := os.Mkdir(cwd, 0o755); err != nil {
				t.Fatal(err)
			}
			found, _ := Discover(DiscoverOptions{Home: home, Cwd: cwd, Tools: []string{ToolClaude}})
			l := Load(found, nil, MapLookup(nil))
			if len(l.Errors) > 0 {
				t.Errorf("errors: %v", l.Errors)
			}
			if diff := cmp.Diff([]string{"approved", "local"}, l.Names()); diff != "" {
				t.Errorf("servers that run (-want +got):\n%s", diff)
			}
			if len(l.Untrusted) != 1 || l.Untrusted[0].Server != "other" || l.Untrusted[0].Reason != "not approved in Claude Code" {
				t.Errorf("untrusted %+v, want only other, not approved", l.Untrusted)
			}
			if c := l.Servers["local"]; c != nil && c.Origin.Project != key {
				t.Errorf("local scope of project %q, want %q (as the file spells it)", c.Origin.Project, key)
			}
		})
	}
}

// TestProjectFileLinksStayInTheProject: a project's config file that is a
// link (or lies under a link) to a file outside the project is not
// followed, whatever the project's trust: the file elsewhere is neither
// read nor quoted. A link inside the project is followed. The problem
// does not say where the link leads.
func TestProjectFileLinksStayInTheProject(t *testing.T) {
	const token = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ2aWN0aW0ifQ.c2lnbmF0dXJl"
	home, base := t.TempDir(), t.TempDir()
	root := filepath.Join(base, "repo")
	if err := os.MkdirAll(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	outside := writeFile(t, base, "secrets/token", token+"\n")
	outsideDir := filepath.Dir(outside)
	writeFile(t, outsideDir, "mcp.json", token)
	writeFile(t, root, "tools/shared-mcp.json", `{"mcpServers": {"inside": {"command": "i"}}}`)
	links := map[string]string{
		filepath.Join(root, ".mcp.json"):           outside,                                       // a link to a file outside
		filepath.Join(root, ".cursor"):             outsideDir,                                    // a link to a folder outside
		filepath.Join(root, ".vscode", "mcp.json"): filepath.Join("..", "..", "secrets", "token"), // relative, out
		filepath.Join(root, "sub", ".mcp.json"):    filepath.Join("..", "tools", "shared-mcp.json"),
	}
	for link, target := range links {
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	const why = "a symbolic link (or a link in its path) that leads out of the project; not followed"
	for _, trust := range []bool{false, true} {
		found, _ := Discover(DiscoverOptions{Home: home, Cwd: filepath.Join(root, "sub"), TrustProject: trust})
		l := Load(found, nil, MapLookup(nil))
		got := map[string]string{}
		for _, s := range l.Sources {
			if s.Err != nil {
				got[s.Path] = s.Err.Message
			}
		}
		want := map[string]string{
			filepath.Join(root, ".mcp.json"):           why,
			filepath.Join(root, ".cursor", "mcp.json"): why,
			filepath.Join(root, ".vscode", "mcp.json"): why,
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("trustProject %v: problems (-want +got):\n%s", trust, diff)
		}
		if trust {
			if diff := cmp.Diff([]string{"inside"}, l.Names()); diff != "" {
				t.Errorf("servers (-want +got):\n%s", diff)
			}
		}
		for _, e := range append(l.Errors, l.Warnings...) {
			if strings.Contains(e.Error(), "eyJ") || strings.Contains(e.Error(), "secrets") {
				t.Errorf("a problem quotes the file outside: %s", e)
			}
		}
	}
}
