package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/mcp-sidecar/mcp-sidecar/internal/safefile"
)

// Project files come with whatever repository is checked out, and a
// server entry is a command to run. The tools people use do not run them
// unasked: Codex reads a project's .codex/config.toml only when the user
// marked the project trusted ([projects."<dir>"] trust_level = "trusted"
// in their own config.toml), and Claude Code starts a .mcp.json server
// only once the user approved it (enabledMcpjsonServers,
// enableAllProjectMcpServers; disabledMcpjsonServers declines one).
// Discover reads those records from the tools' files, and Load starts
// only what they approve (docs/configuration.md).

// Trust is what the tool owning a project file recorded about running its
// servers. A Source without one (nil) is the user's own: the user and
// local scopes, and files a host or a person named. Every server of those
// runs.
type Trust struct {
	// All approves every server of the file.
	All bool
	// Approved and Declined are servers the user approved or declined
	// by name. A declined server does not run, All or not.
	Approved, Declined []string
	// Why says, for a server that is not approved, what the tool recorded
	// (or that it records nothing the sidecar can read); DeclinedWhy
	// where the user declined it.
	Why, DeclinedWhy string
	// Digest, when set, approves every server of the file if the file's
	// content has that digest (FileDigest) when it is read: the trust
	// record's approval of a file as it was (trustrecord.go). Otherwise
	// ChangedWhy says why not.
	Digest, ChangedWhy string
}

// forContent is t for a file whose content is data: Digest decided.
func (t *Trust) forContent(data []byte) *Trust {
	if t == nil || t.Digest == "" {
		return t
	}
	cp := *t
	if FileDigest(data) == t.Digest {
		cp.All = true
	} else if t.ChangedWhy != "" {
		cp.Why = t.ChangedWhy
	}
	return &cp
}

// allows reports whether server may run; if not, why, and whether the
// user declined it.
func (t *Trust) allows(server string) (ok bool, why string, declined bool) {
	if t == nil {
		return true, "", false
	}
	name := claudeName(server)
	has := func(list []string) bool {
		return slices.ContainsFunc(list, func(s string) bool { return claudeName(s) == name })
	}
	switch {
	case has(t.Declined):
		return false, t.DeclinedWhy, true
	case t.All || has(t.Approved):
		return true, "", false
	}
	return false, t.Why, false
}

// claudeName is a server name as Claude Code compares names: every
// character other than a letter, a digit, '_' and '-' is '_'.
func claudeName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '_', r == '-', 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
			return r
		}
		return '_'
	}, s)
}

// Untrusted is a server of a project file that no recorded approval
// covers: it is found and reported, and neither decoded nor started, and
// it replaces no definition of an earlier source (as in Codex and Claude
// Code, where such a file or server does not count).
type Untrusted struct {
	Server string
	Source Source
	// Reason says why, in words for people: what the tool recorded.
	Reason string
	// Declined is set when the user declined the server in the tool; it
	// stays off when the caller trusts the project (TrustProject).
	Declined bool
}

// trustReader reads the approvals of one discovery: the user's Codex
// config and Claude Code's files, for the project directories dirs (the
// repository root first, the working directory last).
// Each file is read once, when first needed.
type trustReader struct {
	dirs  []string
	home  string
	trust bool // TrustProject: approve what no one declined

	codexFile     string
	codexRead     bool
	codexProjects map[string]string // trust_level by cleaned project path

	claudeJSON  string
	claudeRead  bool
	claude      map[string]claudeProject // ~/.claude.json projects, by cleaned path
	claudeScope *Trust                   // the verdict on .mcp.json files

	// recordFile is the sidecar's trust record ("" none), read once
	// (trustrecord.go).
	recordFile string
	recordRead bool
	record     *TrustRecord
	recordErr  error
}

func newTrustReader(o DiscoverOptions, codexFile, claudeJSON string, dirs []string) *trustReader {
	r := &trustReader{dirs: dirs, home: o.Home, trust: o.TrustProject, codexFile: codexFile, claudeJSON: claudeJSON}
	if o.Env != nil {
		r.recordFile, _ = DefaultTrustFile(o.Env)
	}
	return r
}

// finish applies TrustProject to a verdict.
func (r *trustReader) finish(t *Trust) *Trust {
	if r.trust {
		t.All = true
	}
	return t
}

// codex is the verdict on dir/.codex/config.toml, as Codex decides it: the
// trust level recorded for dir, else for the repository root, else for
// the main checkout of a linked worktree; none is not trusted.
func (r *trustReader) codex(dir string) *Trust {
	if !r.codexRead && r.codexFile != "" {
		r.codexRead, r.codexProjects = true, readCodexProjects(r.codexFile)
	}
	root := r.root()
	keys := [][]string{trustKeys(dir), trustKeys(root)}
	if main := mainCheckout(root); main != "" {
		keys = append(keys, trustKeys(main))
	}
	for _, ks := range keys {
		for _, k := range ks {
			switch level, ok := r.codexProjects[k]; {
			case !ok:
			case level == "trusted":
				return r.finish(&Trust{All: true})
			default:
				return r.finish(&Trust{Why: fmt.Sprintf("Codex has %s marked %q (in %s)", k, level, r.codexFile)})
			}
		}
	}
	in := ""
	if r.codexFile != "" {
		in = " (in " + r.codexFile + ")"
	}
	return r.finish(&Trust{Why: fmt.Sprintf("Codex has not marked %s as a trusted project%s", trustKeys(root)[0], in)})
}

// claudeProjectScope is the verdict on every .mcp.json of the project, as
// Claude Code decides it for the working directory. Until the user
// accepted Claude Code's trust dialog for the project, Claude Code
// applies nothing of it, so no approval counts, wherever it is recorded
// (a blanket enableAllProjectMcpServers in ~/.claude/settings.json
// included). Once accepted: approvals in the user's files
// (~/.claude/settings.json, the project's entry in ~/.claude.json) and in
// the project's .claude/settings.json and settings.local.json. A decline
// counts wherever it is, accepted or not.
func (r *trustReader) claudeProjectScope() *Trust {
	if r.claudeScope != nil {
		return r.claudeScope
	}
	var a claudeApprovals
	if r.home != "" {
		a = readClaudeSettings(filepath.Join(r.home, ".claude", "settings.json"), "")
	}
	for _, dir := range r.dirs {
		if p, ok := r.claudeAt(dir); ok {
			a = a.merge(p.approvals)
		}
	}
	for _, dir := range r.dirs {
		for _, name := range []string{"settings.json", "settings.local.json"} {
			a = a.merge(readClaudeSettings(filepath.Join(dir, ".claude", name), r.root()))
		}
	}
	why := "not approved in Claude Code"
	if !r.trustDialogAccepted() {
		a = claudeApprovals{disabled: a.disabled}
		why = "not approved in Claude Code, whose trust dialog was not accepted for this project"
	}
	r.claudeScope = r.finish(&Trust{
		All: a.all, Approved: a.enabled, Declined: a.disabled,
		Why: why, DeclinedWhy: "declined in Claude Code (disabledMcpjsonServers)",
	})
	return r.claudeScope
}

// trustDialogAccepted reports whether ~/.claude.json records that the user
// accepted Claude Code's trust dialog for the working directory or a
// directory above it, as Claude Code checks. Claude Code records the
// directory by its real path (it starts from the process's working
// directory, which has no links); the walk is made from both spellings,
// should the working directory have been given through a link.
func (r *trustReader) trustDialogAccepted() bool {
	if len(r.dirs) == 0 {
		return false
	}
	for _, start := range trustKeys(r.dirs[len(r.dirs)-1]) {
		for dir := start; ; {
			if p, ok := r.claudeAtKey(dir); ok && p.trustAccepted {
				return true
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	return false
}

// claudeAt is what ~/.claude.json records for dir, under its real path
// (as Claude Code keys it) or as given.
func (r *trustReader) claudeAt(dir string) (claudeProject, bool) {
	for _, k := range trustKeys(dir) {
		if p, ok := r.claudeAtKey(k); ok {
			return p, true
		}
	}
	return claudeProject{}, false
}

// claudeAtKey is what ~/.claude.json records under the key dir.
func (r *trustReader) claudeAtKey(dir string) (claudeProject, bool) {
	if !r.claudeRead && r.claudeJSON != "" {
		r.claudeRead, r.claude = true, readClaudeProjects(r.claudeJSON)
	}
	p, ok := r.claude[normalizeKey(filepath.Clean(dir))]
	return p, ok
}

// none is the verdict on the project file path of a tool that records no
// approval the sidecar can read (Cursor, VS Code): what the sidecar's own
// trust record says of it (mcp-sidecar trust), approving the file as it
// was when trusted.
func (r *trustReader) none(tool, path string) *Trust {
	t := &Trust{Why: toolNames[tool] + " records no approval of project servers that mcp-sidecar can read"}
	if !r.recordRead && r.recordFile != "" {
		r.recordRead = true
		r.record, r.recordErr = ReadTrustRecord(r.recordFile)
	}
	if r.recordErr != nil {
		t.Why += fmt.Sprintf(" (%v)", r.recordErr)
	} else if f, ok := r.record.lookup(r.root(), path); ok {
		t.Digest = f.Digest
		t.ChangedWhy = fmt.Sprintf("the file changed since it was trusted with mcp-sidecar trust (%s); %s records no approval mcp-sidecar can read", f.TrustedAt.Format("2006-01-02"), toolNames[tool])
	}
	return r.finish(t)
}

// root is the project's root: the repository root, or the working
// directory outside a repository.
func (r *trustReader) root() string {
	if len(r.dirs) == 0 {
		return ""
	}
	return r.dirs[0]
}

// trustKeys are the keys under which a tool may have recorded dir: as
// given (cleaned) and with its symbolic links resolved, in Codex's order.
func trustKeys(dir string) []string {
	clean := normalizeKey(filepath.Clean(dir))
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		if real = normalizeKey(real); real != clean {
			return []string{real, clean}
		}
	}
	return []string{clean}
}

// normalizeKey compares paths as Codex does: case-insensitively on
// Windows.
func normalizeKey(p string) string {
	if runtime.GOOS == "windows" {
		return strings.ToLower(p)
	}
	return p
}

// mainCheckout is the main checkout of the linked worktree at root, or "".
// A linked worktree's .git is a file "gitdir: <main>/.git/worktrees/<name>"
// (absolute, or relative to root), and anyone can write such a file: a
// checkout (an unpacked archive) naming a trusted repository must not
// borrow its trust. So the worktree is checked as git records it: the
// folder named exists, and its own gitdir file points back at this
// checkout's .git (absolute, or relative to that folder); the .git file,
// the folder and its gitdir file are each the user's or root's, and none
// is a link.
func mainCheckout(root string) string {
	if root == "" {
		return ""
	}
	dotGit := filepath.Join(root, ".git")
	gitdir, ok := readGitdir(dotGit, root)
	if !ok {
		return ""
	}
	fi, err := os.Lstat(gitdir)
	if err != nil || !fi.IsDir() || !ownedBySelfOrRoot(fi) {
		return ""
	}
	back, ok := readGitdir(filepath.Join(gitdir, "gitdir"), gitdir)
	if !ok {
		return ""
	}
	if !sameFile(back, dotGit) {
		return ""
	}
	worktrees := filepath.Dir(gitdir)
	if filepath.Base(worktrees) != "worktrees" {
		return ""
	}
	return filepath.Dir(filepath.Dir(worktrees))
}

// readGitdir reads the path a git link file records (the .git file of a
// worktree, "gitdir: <path>"; or a worktree's gitdir file, "<path>"),
// made absolute against dir and cleaned. ok is false when the file is
// not a regular file of the user or root, or records no path.
func readGitdir(file, dir string) (string, bool) {
	data, _, err := safefile.ReadFile(file, safefile.Policy{Owner: safefile.OwnerSelfOrRoot, MaxBytes: 4096})
	if err != nil {
		return "", false
	}
	line := strings.TrimSpace(string(data))
	if filepath.Base(file) == ".git" {
		var ok bool
		if line, ok = strings.CutPrefix(line, "gitdir:"); !ok {
			return "", false
		}
		line = strings.TrimSpace(line)
	}
	if line == "" {
		return "", false
	}
	if !filepath.IsAbs(line) {
		line = filepath.Join(dir, line)
	}
	return filepath.Clean(line), true
}

// sameFile reports whether a and b are one file.
func sameFile(a, b string) bool {
	ai, err := os.Stat(a)
	if err != nil {
		return false
	}
	bi, err := os.Stat(b)
	return err == nil && os.SameFile(ai, bi)
}

// readCodexProjects reads the trust levels of Codex's user config.toml:
// [projects."<dir>"] trust_level, by cleaned directory. A file that cannot
// be read or parsed records none (Load reports it).
func readCodexProjects(path string) map[string]string {
	data, problem := readUserFile(path, maxConfigFileSize)
	if problem != "" || checkTOMLShape(path, data) != nil {
		return nil
	}
	var top map[string]any
	if _, err := toml.Decode(string(data), &top); err != nil {
		return nil
	}
	projects, _ := top["projects"].(map[string]any)
	out := map[string]string{}
	for dir, v := range projects {
		entry, _ := v.(map[string]any)
		if level, ok := entry["trust_level"].(string); ok {
			out[normalizeKey(filepath.Clean(dir))] = level
		}
	}
	return out
}

// claudeProject is what ~/.claude.json records for one project directory.
type claudeProject struct {
	key           string // as the file spells it
	servers       bool   // it defines servers (Claude Code's local scope)
	trustAccepted bool   // hasTrustDialogAccepted
	approvals     claudeApprovals
}

// claudeApprovals are Claude Code's settings about .mcp.json servers.
type claudeApprovals struct {
	all               bool     // enableAllProjectMcpServers
	enabled, disabled []string // enabledMcpjsonServers, disabledMcpjsonServers
}

func (a claudeApprovals) merge(b claudeApprovals) claudeApprovals {
	return claudeApprovals{
		all:      a.all || b.all,
		enabled:  append(slices.Clip(a.enabled), b.enabled...),
		disabled: append(slices.Clip(a.disabled), b.disabled...),
	}
}

// readClaudeProjects reads the projects of ~/.claude.json, by cleaned
// directory, walking the file in place (it also holds Claude Code's
// history). A file that cannot be read or parsed has none; Load reports
// it when it reads the user scope.
func readClaudeProjects(path string) map[string]claudeProject {
	data, problem := readUserFile(path, maxConfigFileSize)
	if problem != "" || checkJSONSyntax(path, data) != nil {
		return nil
	}
	start, end, ok := lastJSONMember(data, 0, len(data), "projects")
	if !ok {
		return nil
	}
	out := map[string]claudeProject{}
	eachJSONMember(data, start, end, func(dir string, s, t int) {
		// Of a key given twice the last counts.
		p := claudeProject{key: dir, approvals: approvalsIn(data, s, t)}
		if from, to, ok := lastJSONMember(data, s, t, "mcpServers"); ok {
			v := data[from:to]
			p.servers = string(v) != "null" && !emptyJSONObject(v)
		}
		p.trustAccepted = jsonBool(data, s, t, "hasTrustDialogAccepted")
		out[normalizeKey(filepath.Clean(dir))] = p
	})
	return out
}

// readClaudeSettings reads the approvals of a Claude Code settings file:
// the user's when root is "", else one of the project whose root it is.
// One that is absent, not valid JSON or not read (see readProjectFile,
// readUserFile) has none.
func readClaudeSettings(path, root string) claudeApprovals {
	var (
		data    []byte
		problem string
	)
	if root == "" {
		data, problem = readUserFile(path, maxConfigFileSize)
	} else {
		data, problem = readProjectFile(path, root, maxConfigFileSize)
	}
	if problem != "" {
		return claudeApprovals{}
	}
	data = bytes.TrimPrefix(data, []byte("\uFEFF"))
	if checkJSONSyntax(path, data) != nil {
		return claudeApprovals{}
	}
	return approvalsIn(data, 0, len(data))
}

// approvalsIn reads the approval keys of the object data[from:to].
func approvalsIn(data []byte, from, to int) claudeApprovals {
	return claudeApprovals{
		all:      jsonBool(data, from, to, "enableAllProjectMcpServers"),
		enabled:  jsonStrings(data, from, to, "enabledMcpjsonServers"),
		disabled: jsonStrings(data, from, to, "disabledMcpjsonServers"),
	}
}

func jsonBool(data []byte, from, to int, key string) bool {
	s, t, ok := lastJSONMember(data, from, to, key)
	return ok && string(data[s:t]) == "true"
}

func jsonStrings(data []byte, from, to int, key string) []string {
	s, t, ok := lastJSONMember(data, from, to, key)
	if !ok {
		return nil
	}
	var out []string
	if json.Unmarshal(data[s:t], &out) != nil {
		return nil
	}
	return out
}
