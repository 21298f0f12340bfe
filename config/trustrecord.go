package config

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/internal/safefile"
)

// Cursor and VS Code keep no record of the project servers a user
// approved that the sidecar can read, so the sidecar keeps its own: the
// trust record, $XDG_CONFIG_HOME/mcp-sidecar/trust.json, which
// `mcp-sidecar trust` (and --trust-project) writes and Discover reads.
// It holds, for each project (its root, by real path), the Cursor and
// VS Code project files trusted in it (by real path) and the SHA-256 of
// each file's content when it was trusted: a file that changed since,
// however little, is no longer trusted (a new server, a changed command,
// a pulled commit all ask again), and the digest is checked on the very
// bytes Load parses. A file's place, owner and times are not part of its
// identity: a checkout that writes the same content again keeps it.

// TrustFileName is the trust record's name in the sidecar's config folder.
const TrustFileName = "trust.json"

const (
	trustRecordVersion = 1
	maxTrustRecord     = 4 << 20
)

// TrustRecord is the trust record.
type TrustRecord struct {
	Version  int                        `json:"version"`
	Projects map[string]*TrustedProject `json:"projects"`
}

// TrustedProject is one project of the record.
type TrustedProject struct {
	// Files are the trusted files, by real path.
	Files map[string]TrustedFile `json:"files"`
}

// TrustedFile is one trusted file: whose it is, the digest of its content
// when trusted ("sha256:<hex>"), and when.
type TrustedFile struct {
	Tool      string    `json:"tool"`
	Digest    string    `json:"digest"`
	TrustedAt time.Time `json:"trustedAt"`
}

// DefaultTrustFile is $XDG_CONFIG_HOME/mcp-sidecar/trust.json (else
// ~/.config/mcp-sidecar/trust.json); ok is false when neither is an
// absolute path.
func DefaultTrustFile(env Lookup) (path string, ok bool) {
	dir, ok := env.XDGDir("XDG_CONFIG_HOME", ".config")
	if !ok {
		return "", false
	}
	return filepath.Join(dir, "mcp-sidecar", TrustFileName), true
}

// trustRecordPolicy is how the record is read: a file of the user (or
// root) that no one else may write, whose say decides what runs.
var trustRecordPolicy = safefile.Policy{Follow: true, Owner: safefile.OwnerSelfOrRoot, Deny: 0o022, MaxBytes: maxTrustRecord}

// ReadTrustRecord reads the record at path; a missing file is an empty
// record.
func ReadTrustRecord(path string) (*TrustRecord, error) {
	r := &TrustRecord{Version: trustRecordVersion, Projects: map[string]*TrustedProject{}}
	data, _, err := safefile.ReadFile(path, trustRecordPolicy)
	if errors.Is(err, fs.ErrNotExist) {
		return r, nil
	}
	if err != nil {
		var se *safefile.Error
		if errors.As(err, &se) {
			return nil, fmt.Errorf("trust record %s is refused: %s", path, se.Reason)
		}
		return nil, fmt.Errorf("trust record: %w", err)
	}
	if err := json.Unmarshal(data, r); err != nil {
		return nil, fmt.Errorf("trust record %s is not one (%v); remove it to start afresh", path, err)
	}
	if r.Version != trustRecordVersion {
		return nil, fmt.Errorf("trust record %s has version %d; this mcp-sidecar reads version %d", path, r.Version, trustRecordVersion)
	}
	if r.Projects == nil {
		r.Projects = map[string]*TrustedProject{}
	}
	for p, tp := range r.Projects {
		if tp == nil || len(tp.Files) == 0 {
			delete(r.Projects, p)
		}
	}
	return r, nil
}

// Write writes the record to path atomically (0600; its folder made 0700).
func (r *TrustRecord) Write(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("trust record: %w", err)
	}
	r.Version = trustRecordVersion
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := safefile.WriteFile(path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("trust record: %w", err)
	}
	return nil
}

// FileDigest is the identity of a file's content in the record.
func FileDigest(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// realPath is p with its links resolved, or p cleaned when it cannot be.
func realPath(p string) string {
	if real, err := filepath.EvalSymlinks(p); err == nil {
		return real
	}
	return filepath.Clean(p)
}

// lookup is what the record says of the project file path of the project
// whose root is root: the digest it was trusted with, if any.
func (r *TrustRecord) lookup(root, path string) (TrustedFile, bool) {
	if r == nil {
		return TrustedFile{}, false
	}
	p := r.Projects[realPath(root)]
	if p == nil {
		return TrustedFile{}, false
	}
	f, ok := p.Files[realPath(path)]
	return f, ok
}

// TrustableTools are the tools whose project files the record covers:
// those that keep no approval of their own the sidecar can read.
func TrustableTools() []string { return []string{ToolCursor, ToolVSCode} }

// TrustedNow is one file TrustProjectFiles recorded, or could not.
type TrustedNow struct {
	Source Source
	// Servers are the names the file defines.
	Servers []string
	Digest  string
	// Problem says why the file could not be trusted (it cannot be read).
	Problem string
}

// TrustProjectFiles records the project files of sources (found by
// Discover) that belong to TrustableTools, as they are now, under the
// project root of each; the record is changed in memory only. A file that
// cannot be read is reported, not recorded.
func (r *TrustRecord) TrustProjectFiles(sources []Source, now time.Time) []TrustedNow {
	var out []TrustedNow
	for _, src := range sources {
		if src.Scope != ScopeProject || !slices.Contains(TrustableTools(), src.Tool) {
			continue
		}
		root := src.Root
		if root == "" {
			root = workspaceFolder(src.Path)
		}
		t := TrustedNow{Source: src}
		data, problem := readProjectFile(src.Path, root, maxConfigFileSize)
		if problem != "" {
			t.Problem = problem
			out = append(out, t)
			continue
		}
		// What the file defines, decoded as Load would once trusted.
		all := src
		all.Trust = &Trust{All: true}
		parsed := parseSource(all, data, MapLookup(nil))
		t.Servers = sortedKeys(parsed.servers)
		t.Digest = FileDigest(data)
		key := realPath(root)
		p := r.Projects[key]
		if p == nil {
			p = &TrustedProject{Files: map[string]TrustedFile{}}
			r.Projects[key] = p
		}
		p.Files[realPath(src.Path)] = TrustedFile{Tool: src.Tool, Digest: t.Digest, TrustedAt: now.UTC()}
		out = append(out, t)
	}
	return out
}

// Revoke forgets project (its root, or a folder in it given as the root
// Discover finds) and reports whether the record had it.
func (r *TrustRecord) Revoke(project string) bool {
	key := realPath(project)
	if _, ok := r.Projects[key]; !ok {
		return false
	}
	delete(r.Projects, key)
	return true
}

// ProjectRoot is the root of the project at cwd, as Discover finds it:
// the repository root, or cwd outside a repository.
func ProjectRoot(cwd string) string {
	dirs := projectDirs(cwd)
	if len(dirs) == 0 {
		return ""
	}
	return dirs[0]
}

// FileState says whether a trusted file is as it was trusted:
// "trusted", "changed" (its content differs: no longer trusted),
// "missing", or the reason it cannot be read.
func FileState(root, path string, f TrustedFile) string {
	data, problem := readProjectFile(path, root, maxConfigFileSize)
	switch {
	case problem != "" && !present(path):
		return "missing"
	case problem != "":
		return problem
	case FileDigest(data) != f.Digest:
		return "changed"
	}
	return "trusted"
}
