//go:build unix

package launcherprobe

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProbeRefusesWhatAnotherUserCanReplace: the sidecar runs the launcher
// with its own privileges, so the file and every folder it is in must be
// the user's or root's (their owners can put another program in its
// place), and a folder above its own that others may write must be sticky.
// Such a launcher is unavailable and is never run.
func TestProbeRefusesWhatAnotherUserCanReplace(t *testing.T) {
	const (
		nobody    = 65534
		needsRoot = "chown to another user needs root; files of the user and root, the only others a test can make, are accepted"
	)
	chown := func(t *testing.T, p string) {
		t.Helper()
		if err := os.Chown(p, nobody, nobody); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		// make returns the launcher to probe, under base.
		make      func(t *testing.T, base string) (exe, countFile string)
		needsRoot bool
		reason    string // part of the reason; "" for verified
	}{
		{name: "another user's launcher", needsRoot: true, make: func(t *testing.T, base string) (string, string) {
			exe, count := fakeLauncher(t, base, goodBody())
			chown(t, exe)
			return exe, count
		}, reason: "owned by uid 65534, not by the current user"},
		{name: "in another user's folder", needsRoot: true, make: func(t *testing.T, base string) (string, string) {
			dir := filepath.Join(base, "theirs")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			exe, count := fakeLauncher(t, dir, goodBody())
			chown(t, dir)
			return exe, count
		}, reason: "its folder BASE/theirs is owned by uid 65534"},
		{name: "under another user's folder", needsRoot: true, make: func(t *testing.T, base string) (string, string) {
			bin := filepath.Join(base, "theirs", "bin")
			if err := os.MkdirAll(bin, 0o755); err != nil {
				t.Fatal(err)
			}
			exe, count := fakeLauncher(t, bin, goodBody())
			chown(t, filepath.Dir(bin))
			return exe, count
		}, reason: "its folder BASE/theirs is owned by uid 65534"},
		{name: "reached through a link to another user's folder", needsRoot: true, make: func(t *testing.T, base string) (string, string) {
			dir := filepath.Join(base, "theirs")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			_, count := fakeLauncher(t, dir, goodBody())
			chown(t, dir)
			link := filepath.Join(base, "mine")
			if err := os.Symlink(dir, link); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(link, "codex"), count
		}, reason: "its folder BASE/theirs is owned by uid 65534"},
		{name: "under a folder others may write", make: func(t *testing.T, base string) (string, string) {
			bin := filepath.Join(base, "open", "bin")
			if err := os.MkdirAll(bin, 0o755); err != nil {
				t.Fatal(err)
			}
			exe, count := fakeLauncher(t, bin, goodBody())
			if err := os.Chmod(filepath.Dir(bin), 0o777); err != nil {
				t.Fatal(err)
			}
			return exe, count
		}, reason: "its folder BASE/open is writable by group or others"},
		{name: "under a sticky folder others may write", make: func(t *testing.T, base string) (string, string) {
			bin := filepath.Join(base, "tmp", "bin")
			if err := os.MkdirAll(bin, 0o755); err != nil {
				t.Fatal(err)
			}
			exe, count := fakeLauncher(t, bin, goodBody())
			if err := os.Chmod(filepath.Dir(bin), os.ModeSticky|0o777); err != nil {
				t.Fatal(err)
			}
			return exe, count
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.needsRoot && os.Geteuid() != 0 {
				t.Skip(needsRoot)
			}
			base, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			exe, count := tt.make(t, base)
			r := testProber().Probe(context.Background(), exe)
			want := strings.ReplaceAll(tt.reason, "BASE", base)
			switch {
			case want == "" && !r.Verified():
				t.Errorf("Probe = %+v, want verified", r)
			case want != "" && (r.Verified() || !strings.Contains(r.Reason, want)):
				t.Errorf("Probe = %+v, want unavailable saying %q", r, want)
			}
			if n := runs(t, count); want != "" && n != 0 {
				t.Errorf("the refused launcher ran %d times", n)
			}
		})
	}
}
