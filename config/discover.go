package config

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"
)

// Tools whose config files Discover finds.
const (
	ToolCodex  = "codex"
	ToolClaude = "claude"
	ToolCursor = "cursor"
	ToolVSCode = "vscode"
)

// DiscoveryTools lists the tools Discover knows (a fresh slice).
func DiscoveryTools() []string { return []string{ToolCodex, ToolClaude, ToolCursor, ToolVSCode} }

// Scopes of discovered sources, from the weakest to the strongest.
const (
	ScopeUser    = "user"
	ScopeProject = "project"
	ScopeLocal   = "local"
)

// DiscoverOptions say where Discover looks.
type DiscoverOptions struct {
	Home string // the user's home directory
	Cwd  string // absolute; project files are found from here up to the repository root
	Env  Lookup // for CODEX_HOME, XDG_CONFIG_HOME and APPDATA; nil finds nothing
	// Tools restricts discovery to these tools (nil: all of DiscoveryTools).
	Tools []string
	// TrustProject approves the servers of every project file that the
	// user did not decline in its tool (see Trust): the caller vouches for
	// the project, as a person does with --trust-project.
	TrustProject bool
}

// Discover finds the config files of the MCP clients people use, in the
// order Load should read them (a later definition of a server wins):
//
//  1. user scope: Codex's $CODEX_HOME/config.toml (default
//     ~/.codex/config.toml), Claude Code's ~/.claude.json (its top-level
//     mcpServers, what `claude mcp add --scope user` writes), Cursor's
//     ~/.cursor/mcp.json and VS Code's user mcp.json;
//  2. project scope, in each directory from the repository root down to
//     the working directory (a directory nearer the working directory
//     wins): .codex/config.toml, .mcp.json (Claude Code), .cursor/mcp.json
//     and .vscode/mcp.json;
//  3. Claude Code's local scope: projects["<dir>"].mcpServers of
//     ~/.claude.json, for the same directories (what `claude mcp add`
//     writes by default).
//
// This is Claude Code's precedence (local over project over user), and
// every tool's (project over user). The repository root is the nearest
// directory at or above Cwd holding a .git of the user or root (see
// repoRoot); without one, only Cwd is searched. Every source carries that
// root (Source.Root); see read.go for how each file is read. found are the sources where something is (a file, or
// anything else there, which Load reports); looked are all the places
// considered, for saying where nothing was found.
//
// Each project-scope source carries its tool's recorded approval (Trust):
// Codex's trust of the project, Claude Code's approvals of .mcp.json
// servers; Cursor and VS Code record none the sidecar can read.
func Discover(o DiscoverOptions) (found, looked []Source) {
	want := func(tool string) bool { return o.Tools == nil || slices.Contains(o.Tools, tool) }
	lookup := o.Env
	if lookup == nil {
		lookup = func(string) (string, bool) { return "", false }
	}
	dirs := projectDirs(o.Cwd)
	root := ""
	if len(dirs) > 0 {
		root = dirs[0]
	}
	seen := map[string]bool{}
	consider := func(src Source) {
		src.Root = root
		looked = append(looked, src)
		if src.Format != FormatClaudeLocal {
			if seen[src.Path] {
				return
			}
			seen[src.Path] = true
		}
		if present(src.Path) {
			found = append(found, src)
		}
	}

	claudeJSON, codexUser := "", ""
	if o.Home != "" {
		claudeJSON = filepath.Join(o.Home, ".claude.json")
	}
	if ch, ok := lookup("CODEX_HOME"); ok && ch != "" {
		codexUser = filepath.Join(ch, "config.toml")
	} else if o.Home != "" {
		codexUser = filepath.Join(o.Home, ".codex", "config.toml")
	}
	if want(ToolCodex) && codexUser != "" {
		consider(Source{Path: codexUser, Format: FormatCodex, Tool: ToolCodex, Scope: ScopeUser})
	}
	if o.Home != "" {
		if want(ToolClaude) {
			consider(Source{Path: claudeJSON, Format: FormatClaudeUser, Tool: ToolClaude, Scope: ScopeUser})
		}
		if want(ToolCursor) {
			consider(Source{Path: filepath.Join(o.Home, ".cursor", "mcp.json"), Format: FormatMCPServers, Tool: ToolCursor, Scope: ScopeUser})
		}
		if want(ToolVSCode) {
			consider(Source{Path: vscodeUserFile(runtime.GOOS, o.Home, lookup), Format: FormatVSCode, Tool: ToolVSCode, Scope: ScopeUser})
		}
	}

	trust := newTrustReader(o, codexUser, claudeJSON, dirs)
	for _, dir := range dirs {
		if want(ToolCodex) {
			consider(Source{Path: filepath.Join(dir, ".codex", "config.toml"), Format: FormatCodex, Tool: ToolCodex, Scope: ScopeProject, Trust: trust.codex(dir)})
		}
		if want(ToolClaude) {
			consider(Source{Path: filepath.Join(dir, ".mcp.json"), Format: FormatMCPServers, Tool: ToolClaude, Scope: ScopeProject, Trust: trust.claudeProjectScope()})
		}
		if want(ToolCursor) {
			p := filepath.Join(dir, ".cursor", "mcp.json")
			consider(Source{Path: p, Format: FormatMCPServers, Tool: ToolCursor, Scope: ScopeProject, Trust: trust.none(ToolCursor, p)})
		}
		if want(ToolVSCode) {
			p := filepath.Join(dir, ".vscode", "mcp.json")
			consider(Source{Path: p, Format: FormatVSCode, Tool: ToolVSCode, Scope: ScopeProject, Trust: trust.none(ToolVSCode, p)})
		}
	}

	if want(ToolClaude) && claudeJSON != "" {
		for _, dir := range dirs {
			src := Source{Path: claudeJSON, Format: FormatClaudeLocal, Tool: ToolClaude, Scope: ScopeLocal, Project: dir, Root: root}
			looked = append(looked, src)
			if p, ok := trust.claudeAt(dir); ok && p.servers {
				src.Project = p.key // as the file spells it
				found = append(found, src)
			}
		}
	}
	return found, looked
}

// present reports whether something is at path: a file, or anything
// else there (a directory, a FIFO, a device, a link to nothing or a link
// loop), which Load then reports as the problem it is, rather than
// skipping it silently. Only "nothing there" is absent; a path through a
// file (ENOTDIR) is nothing there too.
func present(path string) bool {
	_, err := os.Lstat(path)
	return err == nil || !(errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR))
}

// projectDirs are the directories from the repository root of cwd down to
// cwd, or only cwd outside a repository. The root is the nearest
// directory holding a .git of the user or root (see repoRoot).
func projectDirs(cwd string) []string {
	if cwd == "" {
		return nil
	}
	cwd = filepath.Clean(cwd)
	var chain []string
	for dir := cwd; ; {
		chain = append(chain, dir)
		if repoRoot(dir) {
			slices.Reverse(chain)
			return chain
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return []string{cwd}
		}
		dir = parent
	}
}

// repoRoot reports whether dir holds a .git (a folder, a worktree's file,
// or a link to either) that the user or root owns, the link and what it
// leads to both. Another user's .git is no root: in a folder others may
// write (/tmp), anyone could make every directory below it their
// "repository", whose project files the user's approvals of their own
// project would then cover.
func repoRoot(dir string) bool {
	dotGit := filepath.Join(dir, ".git")
	li, err := os.Lstat(dotGit)
	if err != nil || !ownedBySelfOrRoot(li) {
		return false
	}
	if li.Mode()&fs.ModeSymlink == 0 {
		return true
	}
	fi, err := os.Stat(dotGit)
	return err == nil && ownedBySelfOrRoot(fi)
}

// vscodeUserFile is VS Code's user-profile mcp.json on goos: in the
// folder of VS Code's user settings, %APPDATA%\Code\User on Windows,
// ~/Library/Application Support/Code/User on macOS, and
// $XDG_CONFIG_HOME/Code/User (~/.config/Code/User) elsewhere.
func vscodeUserFile(goos, home string, lookup Lookup) string {
	switch goos {
	case "windows":
		base := filepath.Join(home, "AppData", "Roaming")
		if a, ok := lookup("APPDATA"); ok && filepath.IsAbs(a) {
			base = a
		}
		return filepath.Join(base, "Code", "User", "mcp.json")
	case "darwin":
		return filepath.Join(home, "Library", "Application Support", "Code", "User", "mcp.json")
	}
	base := filepath.Join(home, ".config")
	if x, ok := lookup("XDG_CONFIG_HOME"); ok && filepath.IsAbs(x) {
		base = x
	}
	return filepath.Join(base, "Code", "User", "mcp.json")
}

// emptyJSONObject reports whether v is "{}", blanks allowed inside.
func emptyJSONObject(v []byte) bool {
	return len(v) >= 2 && v[0] == '{' && v[len(v)-1] == '}' && len(bytes.TrimSpace(v[1:len(v)-1])) == 0
}
