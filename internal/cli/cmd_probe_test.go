package cli_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// fakeLauncher writes a launcher script: a good one mentions
// --sandbox-state-json in "sandbox --help", a bad one exits 0 without it.
func fakeLauncher(t *testing.T, good bool) string {
	t.Helper()
	help := "usage: codex sandbox [--full-auto] COMMAND"
	if good {
		help = "usage: codex sandbox [--sandbox-state-json JSON] COMMAND"
	}
	path := filepath.Join(t.TempDir(), "codex")
	writeFile(t, path, "#!/bin/sh\nif [ \"$1\" = sandbox ] && [ \"$2\" = --help ]; then echo '"+help+"'; exit 0; fi\nexit 2\n", 0o755)
	return path
}

func TestCmdProbeLauncher(t *testing.T) {
	good, bad := fakeLauncher(t, true), fakeLauncher(t, false)
	for _, tc := range []struct {
		name string
		path string
		code int
		want []string
	}{
		{"good", good, 0, []string{"Verdict: verified", "ok      3.", `_meta["codex/sandbox-launcher"] = {"codexExecutable":"` + good + `"}`}},
		{"no flag in help", bad, 1, []string{"Verdict: unavailable: help output does not mention --sandbox-state-json", "FAILED  3.", "not a Codex, or one too old"}},
		{"relative", "codex", 1, []string{"Verdict: unavailable: not absolute", "FAILED  1.", "-       3.", `"$(command -v codex)"`}},
		{"missing", "/nonexistent/codex", 1, []string{"Verdict: unavailable: not found", "ok      1.", "FAILED  2."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runCmd(t, nil, "probe-launcher", tc.path)
			if r.code != tc.code {
				t.Fatalf("want exit %d: %s", tc.code, r)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, r.stdout)
				}
			}
		})
	}

	r := runCmd(t, nil, "probe-launcher", "--json", bad)
	var rep struct {
		Path, Status, Reason, Advice string
		FailedCheck                  int
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("--json: %v\n%s", err, r)
	}
	if r.code != 1 || rep.Path != bad || rep.Status != "unavailable" || rep.FailedCheck != 3 || rep.Advice == "" {
		t.Errorf("--json: %+v\n%s", rep, r)
	}
}
