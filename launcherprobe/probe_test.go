//go:build unix

package launcherprobe

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const goodHelp = `Usage: codex sandbox [OPTIONS] -- COMMAND...
      --sandbox-state-json <JSON>  the policy to apply
`

// fakeLauncher writes an executable shell script that appends one line to
// a count file each time it runs, then runs body.
func fakeLauncher(t *testing.T, dir, body string) (exe, countFile string) {
	t.Helper()
	countFile = filepath.Join(dir, "runs")
	exe = filepath.Join(dir, "codex")
	script := fmt.Sprintf("#!/bin/sh\necho run >> '%s'\n%s\n", countFile, body)
	if err := os.WriteFile(exe, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(exe, 0o755); err != nil {
		t.Fatal(err)
	}
	return exe, countFile
}

func goodBody() string {
	return fmt.Sprintf(`if [ "$1" = sandbox ] && [ "$2" = --help ]; then cat <<'EOF'
%sEOF
exit 0; fi
exit 2`, goodHelp)
}

func runs(t *testing.T, countFile string) int {
	t.Helper()
	data, err := os.ReadFile(countFile)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(data), "run\n")
}

func testProber() *Prober {
	return &Prober{Timeout: 20 * time.Second, MaxOutput: 1 << 10, Env: []string{"PATH=/usr/bin:/bin"}}
}

func TestProbeVerdicts(t *testing.T) {
	dir := t.TempDir()
	good, _ := fakeLauncher(t, t.TempDir(), goodBody())

	notExec := filepath.Join(dir, "not-exec")
	os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644)
	os.Chmod(notExec, 0o644)
	worldWritable, _ := fakeLauncher(t, t.TempDir(), goodBody())
	os.Chmod(worldWritable, 0o757)
	groupWritable, _ := fakeLauncher(t, t.TempDir(), goodBody())
	os.Chmod(groupWritable, 0o775)
	fails, _ := fakeLauncher(t, t.TempDir(), "echo --sandbox-state-json; exit 1")
	noFlag, _ := fakeLauncher(t, t.TempDir(), "echo 'Usage: codex sandbox [--full-auto] -- CMD'; exit 0")
	killed, _ := fakeLauncher(t, t.TempDir(), "kill -TERM $$")
	link := filepath.Join(dir, "link-to-good")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	// A chain of links, one relative, ends at good.
	chain := filepath.Join(dir, "chain")
	if err := os.Symlink("link-to-good", chain); err != nil {
		t.Fatal(err)
	}
	dangling := filepath.Join(dir, "dangling")
	if err := os.Symlink(filepath.Join(dir, "missing"), dangling); err != nil {
		t.Fatal(err)
	}
	// The directory of the file is what matters, not that of a link to it:
	// a link in a shared directory may be re-pointed, and a Monitor notices.
	openDir := filepath.Join(t.TempDir(), "open")
	os.Mkdir(openDir, 0o755)
	inOpenDir, _ := fakeLauncher(t, openDir, goodBody())
	os.Chmod(openDir, 0o777)
	groupDir := filepath.Join(t.TempDir(), "group")
	os.Mkdir(groupDir, 0o755)
	inGroupDir, _ := fakeLauncher(t, groupDir, goodBody())
	os.Chmod(groupDir, 0o770)
	linkToOpenDir := filepath.Join(dir, "link-to-open-dir")
	os.Symlink(inOpenDir, linkToOpenDir)
	linkInOpenDir := filepath.Join(openDir, "link")
	os.Symlink(good, linkInOpenDir)

	tests := []struct {
		name   string
		path   string
		target string
		status Status
		reason string
	}{
		{"relative path", "bin/codex", "", StatusUnavailable, "not absolute"},
		{"bare name is never searched in PATH", "sh", "", StatusUnavailable, "not absolute"},
		{"empty", "", "", StatusUnavailable, "not absolute"},
		{"non-UTF-8 path", "/tmp/\xff\xfe/codex", "", StatusUnavailable, "not valid UTF-8"},
		{"missing file", filepath.Join(dir, "missing"), "", StatusUnavailable, "not found"},
		{"dangling symlink", dangling, "", StatusUnavailable, "not found"},
		{"directory", dir, "", StatusUnavailable, "a directory"},
		{"device", "/dev/null", "", StatusUnavailable, "not a regular file"},
		{"not executable", notExec, "", StatusUnavailable, "not executable"},
		{"world-writable", worldWritable, "", StatusUnavailable, "writable by group or others"},
		{"group-writable", groupWritable, "", StatusUnavailable, "writable by group or others"},
		{"directory writable by others", inOpenDir, "", StatusUnavailable, "its directory " + openDir + " is writable by group or others"},
		{"directory writable by group", inGroupDir, "", StatusUnavailable, "its directory " + groupDir + " is writable by group or others"},
		{"symlink to a file in a writable directory", linkToOpenDir, "", StatusUnavailable, "its directory " + openDir + " is writable by group or others"},
		{"probe exits 1", fails, fails, StatusUnavailable, "exited with status 1"},
		{"killed by a signal", killed, killed, StatusUnavailable, "killed by signal terminated"},
		{"output without the flag", noFlag, noFlag, StatusUnavailable, "help output does not mention --sandbox-state-json"},
		{"good fake launcher", good, good, StatusVerified, ""},
		{"symlink to a good launcher", link, good, StatusVerified, ""},
		{"chain of symlinks, one relative", chain, good, StatusVerified, ""},
		{"symlink in a writable directory", linkInOpenDir, good, StatusVerified, ""},
	}
	p := testProber()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := p.Probe(context.Background(), tt.path)
			want := Result{Path: tt.path, Target: tt.target, Status: tt.status, Reason: tt.reason}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Probe(%q) mismatch (-want +got):\n%s", tt.path, diff)
			}
		})
	}
}

func TestProbeTimeout(t *testing.T) {
	dir := t.TempDir()
	// The script's sleep is a grandchild: only a group kill ends it, and
	// until it ends it holds the output pipe open.
	exe, _ := fakeLauncher(t, dir, "sleep 60; echo --sandbox-state-json")
	p := testProber()
	p.Timeout = 100 * time.Millisecond
	got := p.Probe(context.Background(), exe)
	want := Result{Path: exe, Target: exe, Status: StatusUnavailable, Reason: "timed out after 100ms"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
	// A timeout is a verdict on this file: it is cached like any other.
	if again := p.Probe(context.Background(), exe); !again.Cached || again.Reason != want.Reason {
		t.Errorf("second probe = %+v, want the cached timeout", again)
	}
}

func TestProbeOutputIsBounded(t *testing.T) {
	dir := t.TempDir()
	// 1 MiB of noise before the flag: with a 1 KiB bound the flag is never
	// seen, and the child is not blocked by a full pipe either.
	exe, _ := fakeLauncher(t, dir, "head -c 1048576 /dev/zero | tr '\\0' x; echo; echo --sandbox-state-json")
	p := testProber()
	got := p.Probe(context.Background(), exe)
	if got.Reason != "help output does not mention --sandbox-state-json" {
		t.Errorf("Probe = %+v, want the flag beyond the output bound to be ignored", got)
	}
}

func TestProbeEnvironmentAndStdin(t *testing.T) {
	dir := t.TempDir()
	envFile := filepath.Join(dir, "env")
	stdinFile := filepath.Join(dir, "stdin")
	exe, _ := fakeLauncher(t, dir, fmt.Sprintf("env > '%s'; cat > '%s'; %s", envFile, stdinFile, goodBody()))
	t.Setenv("MCP_SIDECAR_PROBE_SECRET", "leaked")
	t.Setenv("LANG", "C.UTF-8")

	p := New()
	if p.Timeout != 5*time.Second {
		t.Errorf("default Timeout = %v, want 5s", p.Timeout)
	}
	if got := p.Probe(context.Background(), exe); !got.Verified() {
		t.Fatalf("Probe = %+v, want verified", got)
	}
	env, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(env), "MCP_SIDECAR_PROBE_SECRET") {
		t.Errorf("probe environment contains a variable outside the allowlist:\n%s", env)
	}
	if !strings.Contains(string(env), "LANG=C.UTF-8") {
		t.Errorf("probe environment lacks allowlisted LANG:\n%s", env)
	}
	stdin, err := os.ReadFile(stdinFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(stdin) != 0 {
		t.Errorf("probe stdin delivered %q, want nothing", stdin)
	}
}

func TestProbeCache(t *testing.T) {
	dir := t.TempDir()
	exe, count := fakeLauncher(t, dir, goodBody())
	p := testProber()
	ctx := context.Background()

	first := p.Probe(ctx, exe)
	second := p.Probe(ctx, exe)
	if !first.Verified() || first.Cached {
		t.Errorf("first probe = %+v, want verified and not cached", first)
	}
	if !second.Verified() || !second.Cached {
		t.Errorf("second probe = %+v, want verified from the cache", second)
	}
	if n := runs(t, count); n != 1 {
		t.Errorf("launcher ran %d times for two probes of an unchanged file, want 1", n)
	}

	t.Run("modified in place", func(t *testing.T) {
		before := runs(t, count)
		f, err := os.OpenFile(exe, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString("# modified\n")
		f.Close()
		if got := p.Probe(ctx, exe); !got.Verified() || got.Cached {
			t.Errorf("probe after modification = %+v, want a fresh verified probe", got)
		}
		if n := runs(t, count) - before; n != 1 {
			t.Errorf("launcher ran %d times after modification, want 1", n)
		}
	})

	t.Run("mtime changed only", func(t *testing.T) {
		before := runs(t, count)
		future := time.Now().Add(time.Hour)
		if err := os.Chtimes(exe, future, future); err != nil {
			t.Fatal(err)
		}
		if got := p.Probe(ctx, exe); got.Cached {
			t.Errorf("probe after touch = %+v, want a fresh probe", got)
		}
		if n := runs(t, count) - before; n != 1 {
			t.Errorf("launcher ran %d times after touch, want 1", n)
		}
	})

	t.Run("replaced by a bad launcher", func(t *testing.T) {
		before := runs(t, count)
		tmp := exe + ".new"
		script := fmt.Sprintf("#!/bin/sh\necho run >> '%s'\nexit 3\n", count)
		if err := os.WriteFile(tmp, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, exe); err != nil {
			t.Fatal(err)
		}
		got := p.Probe(ctx, exe)
		want := Result{Path: exe, Target: exe, Status: StatusUnavailable, Reason: "exited with status 3"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("probe after replacement mismatch (-want +got):\n%s", diff)
		}
		// The negative verdict is cached too.
		if again := p.Probe(ctx, exe); !again.Cached || again.Reason != want.Reason {
			t.Errorf("repeat probe = %+v, want cached %q", again, want.Reason)
		}
		if n := runs(t, count) - before; n != 1 {
			t.Errorf("launcher ran %d times, want 1", n)
		}
	})
}

func TestProbeConcurrentRunsOnce(t *testing.T) {
	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	if err := syscall.Mkfifo(gate, 0o600); err != nil {
		t.Fatal(err)
	}
	// The launcher blocks on the gate until every caller has joined.
	exe, count := fakeLauncher(t, dir, fmt.Sprintf("read line < '%s'\n%s", gate, goodBody()))

	const callers = 8
	var joined sync.WaitGroup
	joined.Add(callers)
	p := testProber()
	p.beforeWait = func(string) { joined.Done() }

	results := make([]Result, callers)
	var done sync.WaitGroup
	for i := range callers {
		done.Add(1)
		go func() {
			defer done.Done()
			results[i] = p.Probe(context.Background(), exe)
		}()
	}
	joined.Wait()
	// Opening the FIFO for writing blocks until the launcher opens it.
	if err := os.WriteFile(gate, []byte("go\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	done.Wait()

	for i, r := range results {
		if !r.Verified() {
			t.Errorf("caller %d: %+v, want verified", i, r)
		}
	}
	if n := runs(t, count); n != 1 {
		t.Errorf("launcher ran %d times for %d concurrent probes, want 1", n, callers)
	}
}

func TestProbeCallerCancelled(t *testing.T) {
	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	if err := syscall.Mkfifo(gate, 0o600); err != nil {
		t.Fatal(err)
	}
	exe, count := fakeLauncher(t, dir, fmt.Sprintf("read line < '%s'\n%s", gate, goodBody()))

	p := testProber()
	ctx, cancel := context.WithCancel(context.Background())
	p.beforeWait = func(string) { cancel() }
	got := p.Probe(ctx, exe)
	if got.Verified() || !strings.HasPrefix(got.Reason, "probe cancelled") {
		t.Errorf("cancelled Probe = %+v, want unavailable, probe cancelled", got)
	}

	// The flight goes on without the cancelled caller; a later caller
	// joins it or reads its cached verdict.
	p.beforeWait = nil
	later := make(chan Result, 1)
	go func() { later <- p.Probe(context.Background(), exe) }()
	if err := os.WriteFile(gate, []byte("go\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := <-later; !r.Verified() {
		t.Errorf("later Probe = %+v, want verified", r)
	}
	if n := runs(t, count); n != 1 {
		t.Errorf("launcher ran %d times, want 1", n)
	}
}

func TestReport(t *testing.T) {
	got := Result{Path: "/x", Status: StatusUnavailable, Reason: "not found", Cached: true}.Report()
	if got.Status != "unavailable" || got.Reason != "not found" {
		t.Errorf("Report = %+v", got)
	}
}
