//go:build !unix

package launcherprobe

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoLauncherWithoutPOSIXPermissions: where the owner-only checks cannot
// be made, even an existing executable is unavailable, with the reason.
func TestNoLauncherWithoutPOSIXPermissions(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	exe, _ = filepath.Abs(exe)
	r := New().Probe(context.Background(), exe)
	if r.Verified() || !strings.HasPrefix(r.Reason, "not supported on ") {
		t.Errorf("Probe(%q) = %+v, want unavailable: not supported", exe, r)
	}
	m := New().Monitor(context.Background(), exe, nil)
	defer m.Close()
	if r := m.Verify(context.Background()); r.Verified() {
		t.Errorf("Monitor.Verify = %+v, want unavailable", r)
	}
}
