// Package launcherprobe verifies that a candidate Codex executable can act
// as the sandbox launcher before anyone advertises it to an MCP server
// (docs/protocol.md, "Launcher probe"), and keeps that verdict current
// while it is advertised.
//
// A candidate is verified when its path is absolute and valid UTF-8, the
// file it resolves to (symlinks are followed to their final target, and the
// target is what is checked, run and advertised) is a regular executable
// file of the user or root, not writable by group or others, in a
// directory not writable by group or others, every folder from there up
// to the root is the user's or root's (and, above its own folder, not
// writable by group or others unless sticky), and `<target> sandbox
// --help` (no stdin, a minimal environment, bounded time and output) exits
// 0 and mentions --sandbox-state-json.
//
// A verdict is about one file identity: the resolved target's path,
// device, inode, size, mtime, ctime and mode, and its directory's device,
// inode and mode. Prober caches verdicts by identity; Monitor re-reads the
// identity each time the launcher is about to be used and probes again,
// once, when it changed, reporting the launcher unavailable meanwhile.
//
// On systems without POSIX permissions (Windows) no launcher is ever
// verified: the checks above cannot be made there, so it fails closed.
package launcherprobe

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/sync/singleflight"

	"github.com/mcp-sidecar/mcp-sidecar/internal/safefile"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// Status is the verdict on a candidate launcher.
type Status string

const (
	StatusVerified    Status = "verified"
	StatusUnavailable Status = "unavailable"
)

// Result is a verdict on a candidate.
type Result struct {
	// Path is the candidate as given.
	Path string
	// Target is the file Path resolves to (symlinks followed): the file
	// that was checked and run, and the path to advertise. Empty when the
	// candidate could not be resolved.
	Target string
	Status Status
	// Reason says why the launcher is unavailable, for people; empty when
	// verified.
	Reason string
	// Cached reports whether the verdict came from the cache.
	Cached bool
}

// Verified reports whether the launcher may be advertised.
func (r Result) Verified() bool { return r.Status == StatusVerified }

// Report converts r for initialize's and servers/status's launcher field.
func (r Result) Report() protocol.LauncherStatus {
	st := protocol.LauncherStatus{Status: string(r.Status), Reason: r.Reason}
	if r.Verified() {
		st.Path = r.Target
	}
	return st
}

// The flag whose mention in the help output proves the launcher speaks the
// sandbox protocol.
const requiredFlag = "--sandbox-state-json"

// Defaults of a Prober.
const (
	DefaultTimeout   = 5 * time.Second
	DefaultMaxOutput = 64 << 10
)

// envAllowlist names the variables a probe inherits from the sidecar's
// environment (the same allowlist as stdio servers get).
var envAllowlist = [...]string{"HOME", "LOGNAME", "PATH", "SHELL", "USER", "LANG", "LC_ALL", "TERM", "TMPDIR", "TZ"}

// A Prober runs probes and caches their results. The zero value is not
// ready; use New. A Prober is safe for concurrent use.
type Prober struct {
	// Timeout bounds one run of `<exe> sandbox --help`.
	Timeout time.Duration
	// MaxOutput bounds the captured stdout+stderr of the run; the rest is
	// read and discarded so the child never blocks on a full pipe.
	MaxOutput int
	// Env is the probe's whole environment.
	Env []string

	flights singleflight.Group

	mu    sync.Mutex
	cache map[string]cacheEntry // by path; one entry per path, the latest identity

	// beforeWait, when set (tests), is called once a Probe call has joined
	// or started the flight for key and is about to wait for it.
	beforeWait func(key string)
}

type cacheEntry struct {
	id     identity
	result Result
}

// identity is what must not change for a verdict to stand: the file that
// would run, and the directory that holds it (whose mode decides who could
// replace the file). The directory's times are left out: files come and go
// beside a launcher (~/.local/bin) without changing it.
type identity struct {
	target         string
	dev, ino       uint64
	size           int64
	mtime, ctime   int64 // nanoseconds
	mode           fs.FileMode
	dirDev, dirIno uint64
	dirMode        fs.FileMode
}

func (id identity) key() string {
	return fmt.Sprintf("%s\x00%d:%d:%d:%d:%d:%o:%d:%d:%o", id.target, id.dev, id.ino, id.size, id.mtime, id.ctime, uint32(id.mode), id.dirDev, id.dirIno, uint32(id.dirMode))
}

// New returns a Prober with the default timeout and output bound, and an
// environment taken from the current process through an allowlist
// (HOME, LOGNAME, PATH, SHELL, USER, LANG, LC_ALL, TERM, TMPDIR, TZ).
func New() *Prober {
	var env []string
	for _, k := range envAllowlist {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return &Prober{Timeout: DefaultTimeout, MaxOutput: DefaultMaxOutput, Env: env}
}

// Probe verifies path once. It never searches PATH: a relative path is
// simply unavailable. If ctx ends while waiting, Probe returns an
// unavailable result without caching it; a probe shared with other callers
// keeps running for them. Use a Monitor to keep a verdict current.
func (p *Prober) Probe(ctx context.Context, path string) Result {
	id, reason := identify(path)
	if reason != "" {
		return unavailable(path, reason)
	}
	key := id.key()

	p.mu.Lock()
	if e, ok := p.cache[path]; ok && e.id == id {
		p.mu.Unlock()
		r := e.result
		r.Cached = true
		return r
	}
	p.mu.Unlock()

	ch := p.flights.DoChan(key, func() (any, error) {
		// Detached from the first caller: its cancellation must not fail
		// the others sharing this flight.
		r := p.verdict(context.WithoutCancel(ctx), path, id)
		// A file changed while it ran: the verdict is about neither
		// version, so it is returned but not cached.
		if now, reason := identify(path); reason == "" && now == id {
			p.mu.Lock()
			if p.cache == nil {
				p.cache = make(map[string]cacheEntry)
			}
			p.cache[path] = cacheEntry{id: id, result: r}
			p.mu.Unlock()
		}
		return r, nil
	})
	if p.beforeWait != nil {
		p.beforeWait(key)
	}
	select {
	case res := <-ch:
		return res.Val.(Result)
	case <-ctx.Done():
		return unavailable(path, "probe cancelled: "+context.Cause(ctx).Error())
	}
}

func unavailable(path, reason string) Result {
	return Result{Path: path, Status: StatusUnavailable, Reason: reason}
}

// identify resolves path to the file that would run and checks its type
// and permissions and those of its directory, returning the identity of
// both, or a reason the candidate cannot be a launcher. Every symlink on
// the way is followed, so the identity is that of the final target: a
// re-pointed link yields another identity.
func identify(path string) (identity, string) {
	switch {
	case unsupportedReason != "":
		return identity{}, unsupportedReason
	case !utf8.ValidString(path):
		return identity{}, "not valid UTF-8"
	case !filepath.IsAbs(path):
		return identity{}, "not absolute"
	}
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return identity{}, "not found"
		}
		return identity{}, fmt.Sprintf("cannot resolve: %v", err)
	}
	if !utf8.ValidString(target) {
		return identity{}, "resolves to a path that is not valid UTF-8"
	}
	fi, err := os.Stat(target)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return identity{}, "not found"
		}
		return identity{}, fmt.Sprintf("cannot stat: %v", err)
	}
	mode := fi.Mode()
	switch {
	case mode.IsDir():
		return identity{}, "a directory"
	case !mode.IsRegular():
		return identity{}, "not a regular file"
	case mode.Perm()&0o111 == 0:
		return identity{}, "not executable"
	case mode.Perm()&0o022 != 0:
		return identity{}, "writable by group or others"
	}
	// The sidecar runs the file with its own privileges: whoever owns it,
	// or a folder it is in, could put their program there.
	if why := safefile.OwnerProblem(fi, safefile.OwnerSelfOrRoot); why != "" {
		return identity{}, why
	}
	dir := filepath.Dir(target)
	di, err := os.Stat(dir)
	if err != nil {
		return identity{}, fmt.Sprintf("cannot stat its directory: %v", err)
	}
	// Whoever can write the directory can swap the file between the check
	// and the run.
	if di.Mode().Perm()&0o022 != 0 {
		return identity{}, fmt.Sprintf("its directory %s is writable by group or others", dir)
	}
	if why := checkFolders(dir, di); why != "" {
		return identity{}, why
	}
	id := identity{target: target, size: fi.Size(), mode: mode, dirMode: di.Mode()}
	var ok bool
	if id.dev, id.ino, id.mtime, id.ctime, ok = statIdentity(fi); !ok {
		return identity{}, "cannot read file identity"
	}
	if id.dirDev, id.dirIno, _, _, ok = statIdentity(di); !ok {
		return identity{}, "cannot read file identity"
	}
	return id, ""
}

// checkFolders says why the folders holding the launcher, from its own
// (dir, described by di) up to the root, do not keep it the user's, or "":
// each must be the user's or root's, since its owner may rename what is in
// it and put another file in the launcher's place; and one above the
// launcher's own folder that group or others may write must be sticky
// (/tmp), where no one but an entry's owner may rename the entry. target
// has no links left, so these are the folders the file is reached through.
func checkFolders(dir string, di fs.FileInfo) string {
	for d := dir; ; {
		if why := safefile.OwnerProblem(di, safefile.OwnerSelfOrRoot); why != "" {
			return fmt.Sprintf("its folder %s is %s", d, why)
		}
		if d != dir && di.Mode().Perm()&0o022 != 0 && di.Mode()&fs.ModeSticky == 0 {
			return fmt.Sprintf("its folder %s is writable by group or others", d)
		}
		parent := filepath.Dir(d)
		if parent == d {
			return ""
		}
		var err error
		if di, err = os.Stat(parent); err != nil {
			return fmt.Sprintf("cannot stat its folder %s: %v", parent, err)
		}
		d = parent
	}
}

// unchanged reports whether candidate still is the file id describes,
// with three stat calls instead of identify's walk of every path
// component: the candidate (following its links, wherever they point now)
// and the target must both be the very file that was identified, unchanged,
// and the target's directory must be unchanged too. When it reports false,
// identify tells what changed.
func (id identity) unchanged(candidate string) bool {
	sameFile := func(path string) bool {
		fi, err := os.Stat(path)
		if err != nil || fi.Size() != id.size || fi.Mode() != id.mode {
			return false
		}
		dev, ino, mtime, ctime, ok := statIdentity(fi)
		return ok && dev == id.dev && ino == id.ino && mtime == id.mtime && ctime == id.ctime
	}
	if !sameFile(candidate) || !sameFile(id.target) {
		return false
	}
	di, err := os.Stat(filepath.Dir(id.target))
	if err != nil || di.Mode() != id.dirMode {
		return false
	}
	dev, ino, _, _, ok := statIdentity(di)
	return ok && dev == id.dirDev && ino == id.dirIno
}

// verdict runs the probe on the identified target.
func (p *Prober) verdict(ctx context.Context, path string, id identity) Result {
	r := Result{Path: path, Target: id.target, Status: StatusVerified}
	if reason := p.run(ctx, id.target); reason != "" {
		r.Status, r.Reason = StatusUnavailable, reason
	}
	return r
}

// run executes `<path> sandbox --help` in its own process group, killing
// the whole group on timeout or when ctx ends, and returns why the
// launcher is unavailable, or "".
func (p *Prober) run(ctx context.Context, path string) string {
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	max := p.MaxOutput
	if max <= 0 {
		max = DefaultMaxOutput
	}
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	out := &boundedBuffer{max: max}
	cmd := exec.CommandContext(runCtx, path, "sandbox", "--help")
	cmd.Env = append([]string{}, p.Env...) // never nil: nil would inherit everything
	cmd.Dir = "/"
	cmd.Stdin = nil // /dev/null
	cmd.Stdout = out
	cmd.Stderr = out
	ownProcessGroup(cmd)
	// Bounds the wait for output pipes held open by escaped descendants.
	cmd.WaitDelay = time.Second

	err := cmd.Run()
	if ctx.Err() != nil {
		return "probe cancelled: " + context.Cause(ctx).Error()
	}
	if runCtx.Err() != nil {
		return fmt.Sprintf("timed out after %s", timeout)
	}
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		if why, ok := signalled(exitErr); ok {
			return why
		}
		return fmt.Sprintf("exited with status %d", exitErr.ExitCode())
	case err != nil && !errors.Is(err, exec.ErrWaitDelay):
		return fmt.Sprintf("could not run: %v", err)
	}
	if !bytes.Contains(out.Bytes(), []byte(requiredFlag)) {
		return "help output does not mention " + requiredFlag
	}
	return ""
}

// boundedBuffer keeps the first max bytes written and discards the rest.
type boundedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *boundedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Bytes()
}
