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

	"github.com/google/go-cmp/cmp"
)

// watched is a Monitor under test with the changes it reported and a
// channel that receives once per finished background probe.
type watched struct {
	*Monitor
	mu      sync.Mutex
	changes []string
	probes  chan struct{}
}

func watch(t *testing.T, path string) *watched {
	t.Helper()
	w := &watched{probes: make(chan struct{}, 16)}
	w.Monitor = testProber().Monitor(context.Background(), path, func(r Result) {
		w.mu.Lock()
		w.changes = append(w.changes, describe(r))
		w.mu.Unlock()
	})
	w.afterProbe = func() { w.probes <- struct{}{} }
	t.Cleanup(w.Close)
	return w
}

func (w *watched) takeChanges() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := w.changes
	w.changes = nil
	return c
}

func describe(r Result) string {
	if r.Verified() {
		return "verified " + r.Target
	}
	return "unavailable: " + r.Reason
}

// replace puts a new file at path by rename, as installers do.
func replace(t *testing.T, path, script string, mode os.FileMode) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tmp, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// TestMonitorFollowsTheFile walks one candidate through the changes a
// launcher can go through after it was verified. Each step says what a
// call sees at once and, when a probe had to run, what it sees after.
func TestMonitorFollowsTheFile(t *testing.T) {
	dir := t.TempDir()
	binDir := filepath.Join(dir, "bin")
	os.Mkdir(binDir, 0o755)
	good, count := fakeLauncher(t, binDir, goodBody())
	other, _ := fakeLauncher(t, t.TempDir(), goodBody())
	link := filepath.Join(dir, "codex-link")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	bad := "#!/bin/sh\necho 'Usage: codex sandbox -- CMD'\n"

	w := watch(t, link)
	if r := w.Verify(context.Background()); !r.Verified() || r.Target != good {
		t.Fatalf("Verify = %+v, want verified %s", r, good)
	}
	<-w.probes // Verify's own
	for range 3 {
		if r := w.Current(); !r.Verified() {
			t.Fatalf("Current on an unchanged file = %+v", r)
		}
	}
	if n := runs(t, count); n != 1 {
		t.Errorf("launcher ran %d times for one verify and three checks of an unchanged file, want 1", n)
	}

	steps := []struct {
		name   string
		change func(t *testing.T)
		now    string // what Current reports at once
		probe  bool   // a probe runs
		after  string // what Current reports after it
	}{
		{"replaced by a 0777 script without the flag", func(t *testing.T) { replace(t, good, bad, 0o777) },
			"unavailable: writable by group or others", false, ""},
		{"made 0755: probed, fails", func(t *testing.T) { os.Chmod(good, 0o755) },
			"unavailable: " + ReasonProbing, true, "unavailable: help output does not mention --sandbox-state-json"},
		{"replaced by a good launcher", func(t *testing.T) { replace(t, good, "#!/bin/sh\n"+goodBody()+"\n", 0o755) },
			"unavailable: " + ReasonProbing, true, "verified " + good},
		{"deleted", func(t *testing.T) { os.Remove(good) },
			"unavailable: not found", false, ""},
		{"installed again", func(t *testing.T) { replace(t, good, "#!/bin/sh\n"+goodBody()+"\n", 0o755) },
			"unavailable: " + ReasonProbing, true, "verified " + good},
		{"directory made group-writable", func(t *testing.T) { os.Chmod(binDir, 0o775) },
			"unavailable: its directory " + binDir + " is writable by group or others", false, ""},
		// The file and the directory are as they were when last probed
		// (a swap meanwhile would show in the file's identity): the
		// verdict on them stands.
		{"directory fixed", func(t *testing.T) { os.Chmod(binDir, 0o755) },
			"verified " + good, false, ""},
		{"link re-pointed", func(t *testing.T) {
			os.Remove(link)
			os.Symlink(other, link)
		}, "unavailable: " + ReasonProbing, true, "verified " + other},
	}
	for _, st := range steps {
		st.change(t)
		if got := describe(w.Current()); got != st.now {
			t.Fatalf("%s: Current = %q, want %q", st.name, got, st.now)
		}
		want := []string{st.now}
		if st.probe {
			<-w.probes
			if got := describe(w.Current()); got != st.after {
				t.Fatalf("%s: Current after the probe = %q, want %q", st.name, got, st.after)
			}
			want = append(want, st.after)
		}
		if diff := cmp.Diff(want, w.takeChanges()); diff != "" {
			t.Errorf("%s: reported changes (-want +got):\n%s", st.name, diff)
		}
	}
}

// TestMonitorProbesOnceWhileCallsArrive: while the probe of a changed file
// runs, every call is refused at once and no second probe starts.
func TestMonitorProbesOnceWhileCallsArrive(t *testing.T) {
	dir := t.TempDir()
	exe, count := fakeLauncher(t, dir, goodBody())
	w := watch(t, exe)
	if r := w.Verify(context.Background()); !r.Verified() {
		t.Fatal(r)
	}
	<-w.probes // Verify's own
	gate := filepath.Join(t.TempDir(), "gate")
	if err := syscall.Mkfifo(gate, 0o600); err != nil {
		t.Fatal(err)
	}
	replace(t, exe, fmt.Sprintf("#!/bin/sh\necho run >> '%s'\nread line < '%s'\n%s\n", count, gate, goodBody()), 0o755)

	var calls sync.WaitGroup
	for range 50 {
		calls.Go(func() {
			if r := w.Current(); r.Verified() || r.Reason != ReasonProbing {
				t.Errorf("Current during the probe = %+v, want unavailable, probing", r)
			}
		})
	}
	calls.Wait()
	// Opening the FIFO for writing blocks until the probe opens it.
	if err := os.WriteFile(gate, []byte("go\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	<-w.probes
	if r := w.Current(); !r.Verified() {
		t.Errorf("Current after the probe = %+v, want verified", r)
	}
	if n := runs(t, count); n != 2 {
		t.Errorf("launcher ran %d times (first verify, then 50 calls on a changed file), want 2", n)
	}
}

// TestMonitorDropsAVerdictOnAFileChangedDuringItsProbe: the verdict of a
// probe is about the file as it was when the probe began; if the file
// changed meanwhile, it is not kept, and the next check probes again.
func TestMonitorDropsAVerdictOnAFileChangedDuringItsProbe(t *testing.T) {
	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	if err := syscall.Mkfifo(gate, 0o600); err != nil {
		t.Fatal(err)
	}
	started := filepath.Join(dir, "started")
	if err := syscall.Mkfifo(started, 0o600); err != nil {
		t.Fatal(err)
	}
	exe, count := fakeLauncher(t, t.TempDir(), fmt.Sprintf("echo up > '%s'\nread line < '%s'\n%s", started, gate, goodBody()))
	w := watch(t, exe)
	if r := w.Current(); r.Reason != ReasonProbing {
		t.Fatalf("first Current = %+v, want probing", r)
	}
	// The probe runs the good script: replacing the file now cannot change
	// what it runs.
	if _, err := os.ReadFile(started); err != nil {
		t.Fatal(err)
	}
	// The probe is blocked on the gate: swap the file for a bad one, then
	// let the probe (of the good script, already running) finish.
	replace(t, exe, fmt.Sprintf("#!/bin/sh\necho run >> '%s'\nexit 7\n", count), 0o755)
	if err := os.WriteFile(gate, []byte("go\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	<-w.probes
	if r := w.Current(); r.Verified() || r.Reason != ReasonProbing {
		t.Fatalf("Current after a probe of a replaced file = %+v, want a new probe", r)
	}
	<-w.probes
	if r := w.Current(); r.Reason != "exited with status 7" {
		t.Errorf("Current = %+v, want the verdict on the new file", r)
	}
}

// TestMonitorCloseEndsTheProbe: Close kills a probe that would otherwise
// block and waits for it.
func TestMonitorCloseEndsTheProbe(t *testing.T) {
	dir := t.TempDir()
	started := filepath.Join(dir, "started")
	if err := syscall.Mkfifo(started, 0o600); err != nil {
		t.Fatal(err)
	}
	// The launcher says it started, then blocks forever (a grandchild
	// holds its output open too).
	exe, _ := fakeLauncher(t, t.TempDir(), fmt.Sprintf("echo up > '%s'\nsleep 3600", started))
	m := testProber().Monitor(context.Background(), exe, nil)
	m.Current()
	if _, err := os.ReadFile(started); err != nil {
		t.Fatal(err)
	}
	m.Close()
	if r := m.Current(); r.Verified() || !strings.Contains(r.Reason, "no longer monitored") {
		t.Errorf("Current after Close = %+v", r)
	}
}

func TestFixedVerdict(t *testing.T) {
	r := Result{Status: StatusUnavailable, Reason: "not representable as UTF-8"}
	m := FixedVerdict(r)
	defer m.Close()
	if diff := cmp.Diff(r, m.Verify(context.Background())); diff != "" {
		t.Error(diff)
	}
	if diff := cmp.Diff(r, m.Current()); diff != "" {
		t.Error(diff)
	}
}
