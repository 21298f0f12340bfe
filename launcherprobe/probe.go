// Package launcherprobe verifies that a candidate Codex executable can act
// as the sandbox launcher before anyone advertises it to an MCP server
// (docs/protocol.md, "Launcher probe"), and caches the verdict per file
// identity.
//
// A candidate is verified when its path is absolute and valid UTF-8, it is
// a regular executable file not writable by group or others, and
// `<exe> sandbox --help` (no stdin, a minimal environment, bounded time and
// output) exits 0 and mentions --sandbox-state-json. Results of a probe that
// ran, positive or negative, are cached by path, device, inode, size, mtime
// and ctime, so a file that is replaced or modified is probed again;
// concurrent probes of one file identity run once.
package launcherprobe

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"golang.org/x/sync/singleflight"

	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// Status is the verdict on a candidate launcher.
type Status string

const (
	StatusVerified    Status = "verified"
	StatusUnavailable Status = "unavailable"
)

// Result is the outcome of Probe.
type Result struct {
	Path   string
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
	return protocol.LauncherStatus{Status: string(r.Status), Reason: r.Reason}
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

// identity is what must not change for a cached verdict to stand.
type identity struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64 // nanoseconds
}

func (id identity) key(path string) string {
	return fmt.Sprintf("%s\x00%d:%d:%d:%d:%d", path, id.dev, id.ino, id.size, id.mtime, id.ctime)
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

// Probe verifies path. It never searches PATH: a relative path is simply
// unavailable. If ctx ends while waiting, Probe returns an unavailable
// result without caching it; a probe shared with other callers keeps
// running for them.
func (p *Prober) Probe(ctx context.Context, path string) Result {
	if !utf8.ValidString(path) {
		return unavailable(path, "not valid UTF-8")
	}
	if !filepath.IsAbs(path) {
		return unavailable(path, "not absolute")
	}
	id, reason := inspect(path)
	if reason != "" {
		return unavailable(path, reason)
	}
	key := id.key(path)

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
		r := p.run(context.WithoutCancel(ctx), path)
		// A file changed while it ran: the verdict is about neither
		// version, so it is returned but not cached.
		if now, reason := inspect(path); reason == "" && now == id {
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

// inspect checks the file's type and permissions and returns its identity,
// or a reason it cannot be a launcher. It follows symlinks: the identity is
// that of the file that would run.
func inspect(path string) (identity, string) {
	fi, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
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
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return identity{}, "cannot read file identity"
	}
	return identity{
		dev:   uint64(st.Dev),
		ino:   uint64(st.Ino),
		size:  st.Size,
		mtime: st.Mtim.Nano(),
		ctime: st.Ctim.Nano(),
	}, ""
}

// run executes `<path> sandbox --help` in its own process group, killing
// the whole group on timeout.
func (p *Prober) run(ctx context.Context, path string) Result {
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	max := p.MaxOutput
	if max <= 0 {
		max = DefaultMaxOutput
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	out := &boundedBuffer{max: max}
	cmd := exec.CommandContext(ctx, path, "sandbox", "--help")
	cmd.Env = append([]string{}, p.Env...) // never nil: nil would inherit everything
	cmd.Dir = "/"
	cmd.Stdin = nil // /dev/null
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		// The negative pid signals the whole group: a launcher that is a
		// script leaves no grandchildren behind.
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	// Bounds the wait for output pipes held open by escaped descendants.
	cmd.WaitDelay = time.Second

	err := cmd.Run()
	if ctx.Err() != nil {
		return unavailable(path, fmt.Sprintf("timed out after %s", timeout))
	}
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return unavailable(path, fmt.Sprintf("killed by signal %s", ws.Signal()))
		}
		return unavailable(path, fmt.Sprintf("exited with status %d", exitErr.ExitCode()))
	case err != nil && !errors.Is(err, exec.ErrWaitDelay):
		return unavailable(path, fmt.Sprintf("could not run: %v", err))
	}
	if !bytes.Contains(out.Bytes(), []byte(requiredFlag)) {
		return unavailable(path, "help output does not mention "+requiredFlag)
	}
	return Result{Path: path, Status: StatusVerified}
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
