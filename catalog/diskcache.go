package catalog

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/safefile"
)

// CacheVersion is the schema version of cache files. It is part of each
// file's name and of its content; a file of another version is never used.
const CacheVersion = 2

// DefaultMaxCacheBytes bounds one cache file (4,096 tools of 8 KiB each
// would be 32 MiB).
const DefaultMaxCacheBytes = 32 << 20

// ErrCorrupt is matched (errors.Is) by Load's error for a cache file that
// exists but cannot be used: not JSON, truncated, oversized, of another
// version or another scope, or failing its checksum. Callers report it once
// and replace the file (Store overwrites it; Remove deletes it).
var ErrCorrupt = errors.New("catalog cache file is unusable")

// ErrUntrusted is matched (errors.Is) by the error of Load and Store for a
// cache folder, and of Load for a cache file, that another user owns or
// that group or others may write: a file planted there could feed a session
// tools nobody listed. Such a folder is refused, never repaired; such a
// file is replaced by the next Store.
var ErrUntrusted = errors.New("catalog cache is not trusted")

// UntrustedError names the folder or file that is not trusted and why. It
// matches ErrUntrusted.
type UntrustedError struct {
	Path   string
	Reason string
}

func (e *UntrustedError) Error() string {
	return fmt.Sprintf("catalog cache: %s is not trusted: %s", e.Path, e.Reason)
}

func (e *UntrustedError) Is(target error) bool { return target == ErrUntrusted }

// CacheEntry is the cached catalog of one server in one discovery scope:
// the raw tool definitions as the server listed them, before filters, and
// what the connection that listed them learnt of the server.
type CacheEntry struct {
	Version  int
	Server   string
	ScopeKey string
	ListedAt time.Time
	Tools    []json.RawMessage
	// Hints are the listing's caching hints (zero for a server of a
	// protocol before 2026-07-28): how long the catalog is fresh after
	// ListedAt.
	Hints CacheHints
	// Era ("modern", "legacy") and ProtocolVersion are what the
	// connection negotiated: the next connection of the scope starts from
	// that era. Instructions are the server's instructions, as it gave
	// them. Empty when unknown.
	Era             string
	ProtocolVersion string
	Instructions    string
}

// DiskCache stores catalogs on disk, one file per discovery scope, named by
// the scope key and CacheVersion. Files hold tool definitions and digests
// only: ScopeKey never contains a secret. The zero value is not usable: set
// Dir (see DefaultCacheDir).
//
// Store is atomic (temp file in Dir, fsync, rename), so concurrent writers,
// in one process or many, never leave a torn file, and a reader sees either
// the old entry or the new one.
type DiskCache struct {
	Dir string
	// MaxBytes bounds a cache file; 0 means DefaultMaxCacheBytes.
	MaxBytes int64
}

// DefaultCacheDir is $XDG_CACHE_HOME/mcp-sidecar, or $HOME/.cache/mcp-sidecar
// when XDG_CACHE_HOME is unset or relative (as the XDG spec says to ignore
// a relative value).
func DefaultCacheDir(env config.Lookup) (string, error) {
	if dir, ok := env.XDGDir("XDG_CACHE_HOME", ".cache"); ok {
		return filepath.Join(dir, "mcp-sidecar"), nil
	}
	return "", errors.New("catalog cache: no cache directory: neither XDG_CACHE_HOME nor HOME is an absolute path")
}

func (c *DiskCache) maxBytes() int64 {
	if c.MaxBytes > 0 {
		return c.MaxBytes
	}
	return DefaultMaxCacheBytes
}

// path is the file of key. Keys are hex (ScopeKey's form): anything else
// could name a path outside Dir.
func (c *DiskCache) path(key string) (string, error) {
	if c.Dir == "" {
		return "", errors.New("catalog cache: no directory configured")
	}
	if key == "" || len(key) > 128 {
		return "", fmt.Errorf("catalog cache: invalid key %q: want 1-128 hex digits", key)
	}
	for i := 0; i < len(key); i++ {
		if !('0' <= key[i] && key[i] <= '9' || 'a' <= key[i] && key[i] <= 'f') {
			return "", fmt.Errorf("catalog cache: invalid key %q: want 1-128 hex digits", key)
		}
	}
	return filepath.Join(c.Dir, fmt.Sprintf("tools-v%d-%s.json", CacheVersion, key)), nil
}

// Load reads the entry of key. A missing file (or folder) is (nil, nil).
// A file that exists but cannot be used is an error matching ErrCorrupt
// (not a regular file, oversized, damaged), or ErrUntrusted (the folder or
// the file is another user's or writable by group or others), naming the
// path and saying why. Load never blocks on what it finds: it reads
// through internal/safefile, which looks before it opens, opens without
// following a link and without waiting for a writer (a FIFO), and checks
// what it opened. Other errors (permissions, I/O) are returned as they
// are.
func (c *DiskCache) Load(key string) (*CacheEntry, error) {
	p, err := c.path(key)
	if err != nil {
		return nil, err
	}
	if err := c.checkDir(); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	data, _, err := safefile.ReadFile(p, safefile.Policy{Owner: safefile.OwnerSelf, Deny: 0o022, MaxBytes: c.maxBytes()})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // none yet, or replaced by a concurrent Store's rename and gone
	}
	if err != nil {
		return nil, cacheError(err)
	}
	e, err := decodeEntry(data, key)
	if err != nil {
		return nil, &CorruptError{Path: p, Reason: err.Error()}
	}
	return e, nil
}

// dirPolicy is what the cache folder must be: this user's, not writable
// by group or others. A link to a folder is followed.
var dirPolicy = safefile.Policy{Follow: true, Owner: safefile.OwnerSelf, Deny: 0o022}

// cacheError says what a refusal of safefile means for the cache: a file
// of the wrong kind or size is corrupt (Store replaces it), one of the
// wrong owner or mode untrusted.
func cacheError(err error) error {
	var se *safefile.Error
	switch {
	case !errors.As(err, &se):
		return fmt.Errorf("catalog cache: %w", err)
	case errors.Is(err, safefile.ErrOwner), errors.Is(err, safefile.ErrMode):
		return &UntrustedError{Path: se.Path, Reason: se.Reason}
	case errors.Is(err, safefile.ErrNotDir):
		return fmt.Errorf("catalog cache: %s is not a directory", se.Path)
	}
	return &CorruptError{Path: se.Path, Reason: se.Reason}
}

// CheckDir reports whether the cache folder may be used: nil for a folder
// of the current user that group and others cannot write; an error
// matching fs.ErrNotExist when it does not exist yet (Store creates it,
// 0700); an error matching ErrUntrusted when it is refused. A link to a
// folder is followed: the folder it names is what is checked.
func (c *DiskCache) CheckDir() error { return c.checkDir() }

func (c *DiskCache) checkDir() error {
	_, err := safefile.CheckDir(c.Dir, dirPolicy)
	if err != nil {
		return cacheError(err)
	}
	return nil
}

// CorruptError says why a cache file is unusable. It matches ErrCorrupt.
type CorruptError struct {
	Path   string
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("catalog cache: %s is unusable: %s", e.Path, e.Reason)
}

func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// fileEntry is the on-disk form. Sum is the SHA-256 of what the entry
// tells a session (the hints, era, protocol version, instructions and the
// tools, each length-prefixed, as stored): it catches damage that still
// parses.
type fileEntry struct {
	Version         *int              `json:"version"`
	Server          string            `json:"server"`
	ScopeKey        string            `json:"scopeKey"`
	ListedAt        time.Time         `json:"listedAt"`
	TTLMs           *int64            `json:"ttlMs,omitempty"`
	CacheScope      string            `json:"cacheScope,omitempty"`
	Era             string            `json:"era,omitempty"`
	ProtocolVersion string            `json:"protocolVersion,omitempty"`
	Instructions    string            `json:"instructions,omitempty"`
	Sum             string            `json:"sha256"`
	Tools           []json.RawMessage `json:"tools"`
}

func (fe *fileEntry) sum() string {
	h := sha256.New()
	var n [8]byte
	field := func(b []byte) {
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	ttl := "none"
	if fe.TTLMs != nil {
		ttl = strconv.FormatInt(*fe.TTLMs, 10)
	}
	for _, s := range []string{ttl, fe.CacheScope, fe.Era, fe.ProtocolVersion, fe.Instructions} {
		field([]byte(s))
	}
	for _, t := range fe.Tools {
		field(t)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// decodeEntry parses and checks a cache file's bytes for key. It must not
// panic on any input (FuzzDiskCacheDecode).
func decodeEntry(data []byte, key string) (*CacheEntry, error) {
	var fe fileEntry
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&fe); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, errors.New("truncated")
		}
		return nil, fmt.Errorf("not a cache entry: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the entry")
	}
	switch {
	case fe.Version == nil:
		return nil, errors.New("no version")
	case *fe.Version != CacheVersion:
		return nil, fmt.Errorf("version %d, want %d", *fe.Version, CacheVersion)
	case fe.ScopeKey != key:
		return nil, fmt.Errorf("entry of scope %q, want %q", fe.ScopeKey, key)
	case fe.Server == "":
		return nil, errors.New("no server")
	case fe.Tools == nil:
		return nil, errors.New("no tools")
	case fe.Sum != fe.sum():
		return nil, errors.New("checksum mismatch")
	}
	for i, t := range fe.Tools {
		if kind(t) != '{' {
			return nil, fmt.Errorf("tool #%d is not an object", i)
		}
	}
	return &CacheEntry{
		Version:         *fe.Version,
		Server:          fe.Server,
		ScopeKey:        fe.ScopeKey,
		ListedAt:        fe.ListedAt,
		Tools:           fe.Tools,
		Hints:           CacheHints{TTLMs: fe.TTLMs, Scope: fe.CacheScope},
		Era:             fe.Era,
		ProtocolVersion: fe.ProtocolVersion,
		Instructions:    fe.Instructions,
	}, nil
}

// encodeEntry writes the entry with each tool's bytes verbatim: going
// through json.Marshal would compact them and escape <, > and &.
func encodeEntry(e *CacheEntry, key string) ([]byte, error) {
	// Surrounding whitespace is trimmed because decoding drops it, and the
	// checksum must be over what a reader will see.
	tools := make([]json.RawMessage, len(e.Tools))
	for i, t := range e.Tools {
		if !json.Valid(t) || kind(t) != '{' {
			return nil, fmt.Errorf("tool #%d is not a JSON object", i)
		}
		tools[i] = bytes.TrimSpace(t)
	}
	fe := fileEntry{
		Version:         new(int(CacheVersion)),
		Server:          e.Server,
		ScopeKey:        key,
		ListedAt:        e.ListedAt,
		TTLMs:           e.Hints.TTLMs,
		CacheScope:      e.Hints.Scope,
		Era:             e.Era,
		ProtocolVersion: e.ProtocolVersion,
		Instructions:    e.Instructions,
		Tools:           tools,
	}
	fe.Sum = fe.sum()
	fe.Tools = nil
	head, err := json.Marshal(fe)
	if err != nil {
		return nil, err
	}
	// head ends in `"tools":null}`; replace that with the verbatim list.
	const tail = `"tools":null}`
	if !bytes.HasSuffix(head, []byte(tail)) {
		return nil, errors.New("unexpected encoding of the entry header")
	}
	var b bytes.Buffer
	b.Write(head[:len(head)-len(tail)])
	b.WriteString(`"tools":[`)
	for i, t := range tools {
		if i > 0 {
			b.WriteString(",\n")
		} else {
			b.WriteString("\n")
		}
		b.Write(t)
	}
	b.WriteString("\n]}\n")
	return b.Bytes(), nil
}

// Store writes the entry of key atomically: a temp file in Dir, written,
// fsynced and renamed over the old file. Dir is created 0700 when missing;
// the file is 0600. e.Version is ignored (CacheVersion is written) and
// e.ScopeKey must be key or empty.
func (c *DiskCache) Store(key string, e *CacheEntry) error {
	p, err := c.path(key)
	if err != nil {
		return err
	}
	if e == nil || e.Server == "" {
		return fmt.Errorf("catalog cache: store %s: entry without server", p)
	}
	if e.ScopeKey != "" && e.ScopeKey != key {
		return fmt.Errorf("catalog cache: store server %q: entry of scope %q under key %q", e.Server, e.ScopeKey, key)
	}
	data, err := encodeEntry(e, key)
	if err != nil {
		return fmt.Errorf("catalog cache: store server %q: %w", e.Server, err)
	}
	if int64(len(data)) > c.maxBytes() {
		return fmt.Errorf("catalog cache: store server %q: entry of %d bytes exceeds the %d-byte limit", e.Server, len(data), c.maxBytes())
	}
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return fmt.Errorf("catalog cache: create directory: %w", err)
	}
	// A folder others may write (or another user's) is refused as it is:
	// entries written there could be replaced behind our back.
	if err := c.checkDir(); err != nil {
		return err
	}
	if err := safefile.WriteFile(p, data, 0o600); err != nil {
		// An empty folder planted at the entry's path would block every
		// rename: it goes (anything else there is reported).
		if fi, lerr := os.Lstat(p); lerr != nil || !fi.IsDir() || os.Remove(p) != nil {
			return fmt.Errorf("catalog cache: %w", err)
		}
		if err := safefile.WriteFile(p, data, 0o600); err != nil {
			return fmt.Errorf("catalog cache: %w", err)
		}
	}
	return nil
}

// Remove deletes the entry of key; a missing entry is not an error.
func (c *DiskCache) Remove(key string) error {
	p, err := c.path(key)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("catalog cache: %w", err)
	}
	return nil
}
