package oauth

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/safefile"
)

// Key names one set of credentials: the server's URL, the RFC 8707
// resource and the scopes configured for it. Two servers configured alike
// share their credentials; a change of any part asks for a new
// authorization rather than use a token granted for something else.
type Key struct {
	URL      string
	Resource string
	Scopes   []string // as configured; order does not matter
}

// ID is the key's name in the credentials file.
func (k Key) ID() string {
	scopes := slices.Clone(k.Scopes)
	slices.Sort(scopes)
	scopes = slices.Compact(scopes)
	sum := sha256.Sum256([]byte(k.URL + "\x00" + k.Resource + "\x00" + strings.Join(scopes, " ")))
	return hex.EncodeToString(sum[:16])
}

// Credentials are what one authorization left: the client it used (so
// that a refresh can be made without the user) and the tokens.
type Credentials struct {
	// Server is the name of the server that was authorized (for people;
	// the key is what counts).
	Server   string   `json:"server"`
	URL      string   `json:"url"`
	Resource string   `json:"resource,omitempty"`
	Scopes   []string `json:"scopes,omitempty"`

	// Issuer is the authorization server that issued them (its issuer
	// identifier): they are used with it alone (issuer.go).
	Issuer   string `json:"issuer,omitempty"`
	ClientID string `json:"clientId"`
	// ClientSecret is a secret the authorization server issued at dynamic
	// registration. A configured client's secret is never stored: it is
	// read from its environment variable each time (ClientFromConfig).
	ClientSecret     string `json:"clientSecret,omitempty"`
	ClientFromConfig bool   `json:"clientFromConfig,omitempty"`
	TokenURL         string `json:"tokenUrl"`
	// AuthStyle is how the client authenticates at TokenURL
	// (oauth2.AuthStyle: 0 auto, 1 in params, 2 in header).
	AuthStyle int `json:"authStyle,omitempty"`

	AccessToken  string    `json:"accessToken"`
	TokenType    string    `json:"tokenType,omitempty"`
	RefreshToken string    `json:"refreshToken,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
	// GrantedScopes are the scopes the token carries (the token
	// response's scope, else those requested).
	GrantedScopes []string  `json:"grantedScopes,omitempty"`
	ObtainedAt    time.Time `json:"obtainedAt"`
}

// Store is the credentials file: credentials.json in a directory of its
// own that only its owner can enter (0700), the file only its owner can
// read (0600). A file or directory that someone else owns or can read is
// refused, not used: someone else's tokens would make the sidecar act as
// that someone; so is anything but a regular file at the file's path (a
// link, a FIFO), found without blocking (internal/safefile). Writes are atomic (temp file, fsync, rename) under a lock
// file (flock(2); LockFileEx on Windows), so the sidecar and a login
// command in another process never lose each other's updates. The same
// file keeps the clients registered dynamically (registrations.go).
type Store struct {
	Dir string

	mu sync.Mutex // orders this process's updates; the lock file orders processes
}

// DefaultStoreDir is $XDG_CONFIG_HOME/mcp-sidecar/credentials, or
// $HOME/.config/mcp-sidecar/credentials: tokens are configuration a person
// made, not a cache (the catalog cache may be wiped at any time).
func DefaultStoreDir(env config.Lookup) (string, error) {
	if dir, ok := env.XDGDir("XDG_CONFIG_HOME", ".config"); ok {
		return filepath.Join(dir, "mcp-sidecar", "credentials"), nil
	}
	return "", errors.New("credentials store: no directory: neither XDG_CONFIG_HOME nor HOME is an absolute path")
}

const (
	storeFile    = "credentials.json"
	storeLock    = "credentials.lock"
	storeVersion = 1
	// maxStoreBytes bounds the file: a few hundred servers' tokens.
	maxStoreBytes = 4 << 20
)

type storeFileFormat struct {
	Version     int                     `json:"version"`
	Credentials map[string]*Credentials `json:"credentials"`
	// Registrations are the clients registered dynamically, by
	// registration endpoint (registrations.go).
	Registrations map[string]*Registration `json:"registrations,omitempty"`
}

// ErrUnsafe is matched (errors.Is) by the error for a credentials file or
// directory that another user owns, that others may read or write, or
// that is something else (a link, a FIFO, a folder where the file
// belongs).
var ErrUnsafe = errors.New("credentials store is not private")

func (s *Store) path() string { return filepath.Join(s.Dir, storeFile) }

// stamp identifies one version of the file, so that a reader can tell
// whether it changed without reading it.
type stamp struct {
	info fs.FileInfo
}

func (a stamp) same(b stamp) bool {
	if a.info == nil || b.info == nil {
		return a.info == nil && b.info == nil
	}
	return os.SameFile(a.info, b.info) && a.info.Size() == b.info.Size() && a.info.ModTime().Equal(b.info.ModTime())
}

// current looks at the file (a link is not followed, as Load does not):
// a missing file is the zero stamp.
func (s *Store) current() (stamp, error) {
	fi, err := os.Lstat(s.path())
	if errors.Is(err, fs.ErrNotExist) {
		return stamp{}, nil
	}
	if err != nil {
		return stamp{}, fmt.Errorf("credentials store: %w", err)
	}
	return stamp{info: fi}, nil
}

// Load reads every entry, by Key.ID. A missing file or directory is no
// entries. What is at the file's path is read only when it is a regular
// file (never a link), private to this user; anything else is refused
// without blocking (a FIFO there would otherwise hang every caller).
func (s *Store) Load() (map[string]*Credentials, stamp, error) {
	f, at, err := s.load()
	if err != nil {
		return nil, stamp{}, err
	}
	return f.Credentials, at, nil
}

// load reads the whole file; its maps are never nil.
func (s *Store) load() (*storeFileFormat, stamp, error) {
	if s.Dir == "" {
		return nil, stamp{}, errors.New("credentials store: no directory configured")
	}
	if err := checkDir(s.Dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, stamp{}, err
	}
	data, fi, err := safefile.ReadFile(s.path(), filePolicy)
	if errors.Is(err, fs.ErrNotExist) {
		return decodeStore(nil)
	}
	if err != nil {
		return nil, stamp{}, storeError(err)
	}
	content, _, err := decodeStore(data)
	if err != nil {
		return nil, stamp{}, fmt.Errorf("credentials store: %s: %w", s.path(), err)
	}
	return content, stamp{info: fi}, nil
}

// The store's folder, file and lock file: this user's alone, no link, the
// file bounded.
var (
	dirPolicy  = safefile.Policy{Owner: safefile.OwnerSelf, Deny: 0o077}
	filePolicy = safefile.Policy{Owner: safefile.OwnerSelf, Deny: 0o077, MaxBytes: maxStoreBytes}
	lockPolicy = safefile.Policy{Owner: safefile.OwnerSelf, Deny: 0o077}
)

// decodeStore decodes the file's data (none: an empty store).
func decodeStore(data []byte) (*storeFileFormat, stamp, error) {
	f := &storeFileFormat{Version: storeVersion}
	if len(bytes.TrimSpace(data)) > 0 {
		if err := json.Unmarshal(data, f); err != nil {
			return nil, stamp{}, fmt.Errorf("not a credentials file: %w", err)
		}
		if f.Version != storeVersion {
			return nil, stamp{}, fmt.Errorf("version %d, this mcp-sidecar reads version %d", f.Version, storeVersion)
		}
	}
	if f.Credentials == nil {
		f.Credentials = map[string]*Credentials{}
	}
	if f.Registrations == nil {
		f.Registrations = map[string]*Registration{}
	}
	for id, c := range f.Credentials {
		if c == nil {
			delete(f.Credentials, id)
		}
	}
	for id, r := range f.Registrations {
		if r == nil {
			delete(f.Registrations, id)
		}
	}
	return f, stamp{}, nil
}

// Update reads the file, lets fn change the entries and writes them back,
// all under the lock, creating the directory (0700) and the file (0600) as
// needed. fn's error aborts the update.
func (s *Store) Update(fn func(entries map[string]*Credentials) error) error {
	return s.update(func(f *storeFileFormat) error { return fn(f.Credentials) })
}

// update is Update of the whole file.
func (s *Store) update(fn func(f *storeFileFormat) error) error {
	if s.Dir == "" {
		return errors.New("credentials store: no directory configured")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return fmt.Errorf("credentials store: %w", err)
	}
	if err := checkDir(s.Dir); err != nil {
		return err
	}
	unlock, err := lockFile(filepath.Join(s.Dir, storeLock))
	if err != nil {
		return storeError(err)
	}
	defer unlock()
	content, _, err := s.load()
	if err != nil {
		return err
	}
	if err := fn(content); err != nil {
		return err
	}
	content.Version = storeVersion
	data, err := json.MarshalIndent(content, "", "  ")
	if err != nil {
		return fmt.Errorf("credentials store: %w", err)
	}
	if err := safefile.WriteFile(s.path(), append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("credentials store: %w", err)
	}
	return nil
}

// unsafeError says why a path of the store is refused.
type unsafeError struct {
	path, why string
}

func (e *unsafeError) Error() string {
	return fmt.Sprintf("credentials store: %s is refused: %s", e.path, e.why)
}

func (e *unsafeError) Is(target error) bool { return target == ErrUnsafe }

// checkDir checks the store's folder: a folder (not a link) of this
// user that no one else may enter.
func checkDir(dir string) error {
	_, err := safefile.CheckDir(dir, dirPolicy)
	return storeError(err)
}

// storeError makes a refusal of safefile an unsafeError (ErrUnsafe) with
// the fix, and names the store in the system's errors.
func storeError(err error) error {
	var se *safefile.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &se) && !errors.Is(err, safefile.ErrTooLarge):
		why := se.Reason
		if errors.Is(err, safefile.ErrMode) {
			want := "700"
			if base := filepath.Base(se.Path); base == storeFile || base == storeLock {
				want = "600"
			}
			why += fmt.Sprintf("; chmod %s %s", want, se.Path)
		}
		return &unsafeError{se.Path, why}
	case errors.Is(err, fs.ErrNotExist):
		return err
	}
	return fmt.Errorf("credentials store: %w", err)
}
