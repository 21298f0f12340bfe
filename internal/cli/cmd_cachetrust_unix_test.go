//go:build unix

package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
)

// TestCmdDoctorCacheFolder: doctor says what the sidecar will make of the
// catalog cache folder, and names a refused one with the reason.
func TestCmdDoctorCacheFolder(t *testing.T) {
	xdg := isolate(t)
	dir := filepath.Join(xdg, "mcp-sidecar")
	cfg := writeConfig(t, server{name: "alpha", spec: fixture.Spec{ToolCount: 1}})
	cacheOf := func(args ...string) (status, reason string, r result) {
		t.Helper()
		r = runCmd(t, nil, append([]string{"doctor", "--json", "--config", cfg}, args...)...)
		var d struct {
			Cache struct {
				Dir, Status, Reason string
			} `json:"cache"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
			t.Fatalf("stdout is not JSON: %v\n%s", err, r)
		}
		if d.Cache.Status != "off" && d.Cache.Dir != dir {
			t.Errorf("cache dir %q, want %q", d.Cache.Dir, dir)
		}
		return d.Cache.Status, d.Cache.Reason, r
	}
	if st, _, _ := cacheOf(); st != "absent" {
		t.Errorf("first run: cache %q, want absent (the run creates it)", st)
	}
	if st, _, _ := cacheOf(); st != "ok" {
		t.Errorf("second run: cache %q, want ok", st)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	st, why, r := cacheOf()
	if st != "untrusted" || !strings.Contains(why, "writable by group or others") {
		t.Errorf("0777 folder: cache %q (%q), want untrusted saying why", st, why)
	}
	if r.code != 0 {
		t.Errorf("an untrusted cache is not a failed check: exit %d", r.code)
	}
	r = runCmd(t, nil, "doctor", "--config", cfg)
	if !strings.Contains(r.stdout, "Catalog cache: untrusted, "+dir) {
		t.Errorf("the table does not report the refused folder:\n%s", r.stdout)
	}
}
