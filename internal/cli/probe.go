package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/mcp-sidecar/mcp-sidecar/launcherprobe"
	"github.com/mcp-sidecar/mcp-sidecar/sandbox"
)

// ProbeDoc is probe-launcher's help text.
const ProbeDoc = `Usage: mcp-sidecar probe-launcher PATH [--json]

Runs the sidecar's launcher probe on PATH, a candidate sandbox launcher (the
Codex executable a harness passes as initialize.launcher.codexExecutable),
and explains the verdict. The sidecar sends codex/sandbox-launcher to a
server only when its candidate passed these checks, in order:

  1. PATH is absolute and valid UTF-8 (the sidecar never searches PATH)
  2. it resolves (symlinks followed) to a regular executable file, not
     writable by group or others, in a directory not writable by group or
     others
  3. "PATH sandbox --help", run with no stdin, a minimal environment and a
     5 s limit, exits 0 and mentions --sandbox-state-json

Exit status: 0 when verified, 1 when unavailable, 2 for a bad command line.

Examples:
  mcp-sidecar probe-launcher "$(command -v codex)"
  mcp-sidecar probe-launcher --json /opt/codex/bin/codex
`

// The probe's checks, as ProbeDoc lists them.
var probeChecks = []string{
	"absolute path, valid UTF-8",
	"resolves to a regular executable file, not writable by group or others, in a directory not writable by group or others",
	"`sandbox --help` exits 0 within the limit and mentions --sandbox-state-json",
}

type probeReport struct {
	Path   string `json:"path"`
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
	// FailedCheck is the 1-based number of the check that failed (0 when
	// verified).
	FailedCheck int    `json:"failedCheck,omitempty"`
	Advice      string `json:"advice,omitempty"`
}

// ProbeLauncher runs the probe-launcher command.
func ProbeLauncher(ctx context.Context, env Env, args []string) int {
	fs := newFlagSet()
	asJSON := fs.Bool("json", false, "print the verdict as JSON")
	if code, done := parseFlags(&env, "probe-launcher", fs, args, 1, 1); done {
		return code
	}
	path := fs.Arg(0)
	res := launcherprobe.New().Probe(ctx, path)
	rep := probeReport{Path: path, Status: string(res.Status), Reason: res.Reason}
	if !res.Verified() {
		rep.FailedCheck, rep.Advice = explainProbe(path, res.Reason)
	}
	if *asJSON {
		if err := writeJSON(env.Stdout, rep); err != nil {
			fmt.Fprintln(env.Stderr, "mcp-sidecar probe-launcher:", err)
			return exitFailure
		}
	} else {
		w := env.Stdout
		fmt.Fprintf(w, "Launcher candidate: %s\n", path)
		if res.Verified() {
			fmt.Fprintln(w, "Verdict: verified")
		} else {
			fmt.Fprintf(w, "Verdict: unavailable: %s\n", res.Reason)
		}
		fmt.Fprintln(w, "\nChecks:")
		for i, c := range probeChecks {
			mark := "ok    "
			switch {
			case rep.FailedCheck == i+1:
				mark = "FAILED"
			case rep.FailedCheck != 0 && i+1 > rep.FailedCheck:
				mark = "-     "
			}
			fmt.Fprintf(w, "  %s  %d. %s\n", mark, i+1, c)
		}
		fmt.Fprintln(w)
		if res.Verified() {
			v, _ := sandbox.LauncherValue(path, sandbox.TransportStdio)
			fmt.Fprintf(w, "A harness that passes this path as initialize.launcher.codexExecutable gets\nlauncher \"verified\", and each tools/call with a sandboxState to a local stdio\nserver that advertises codex/sandbox-state carries\n  _meta[%q] = %s\n", sandbox.KeyLauncher, v)
		} else {
			fmt.Fprintf(w, "%s\n\nWith this candidate the sidecar reports launcher \"unavailable\" and sends no\n%s; servers that require a launcher fail closed.\n", wrap(rep.Advice, 78), sandbox.KeyLauncher)
		}
	}
	if !res.Verified() {
		return exitFailure
	}
	return exitOK
}

// explainProbe maps the probe's reason to the check that failed and what
// to do about it.
func explainProbe(path, reason string) (int, string) {
	switch {
	case reason == "not absolute":
		find := "command -v " + path
		if strings.Contains(path, "/") {
			find = "realpath " + path
		}
		return 1, "The sidecar never searches PATH or resolves relative paths. Give the absolute path, e.g. mcp-sidecar probe-launcher \"$(" + find + ")\"."
	case reason == "not valid UTF-8":
		return 1, "The path travels in JSON, which must be valid UTF-8: move the executable to a path that is."
	case reason == "not found":
		return 2, "Nothing is at that path."
	case reason == "a directory" || reason == "not a regular file":
		return 2, "The launcher must be an executable file (a symlink to one is fine)."
	case reason == "not executable":
		return 2, "The file has no execute permission: chmod +x " + path
	case reason == "writable by group or others":
		return 2, "Anyone who can rewrite the launcher could run code with the sandbox's authority: chmod go-w " + path
	case strings.HasPrefix(reason, "its directory "):
		return 2, "Anyone who can write the launcher's directory could swap the file between the check and its use: chmod go-w the directory, or install the launcher elsewhere."
	case strings.HasPrefix(reason, "not supported on "):
		return 2, "The sidecar never advertises a launcher on this system."
	case strings.HasPrefix(reason, "cannot "):
		return 2, "The sidecar cannot inspect the file; check its permissions and those of its directories."
	case strings.HasPrefix(reason, "timed out"):
		return 3, "\"" + path + " sandbox --help\" did not finish in time; a launcher must answer it promptly, without input."
	case strings.HasPrefix(reason, "exited with status"), strings.HasPrefix(reason, "killed by signal"):
		return 3, "\"" + path + " sandbox --help\" failed: this is not a Codex build with the sandbox subcommand."
	case strings.HasPrefix(reason, "help output does not mention"):
		return 3, "It runs, but \"sandbox --help\" does not mention --sandbox-state-json: this is not a Codex, or one too old to launch sandboxed servers."
	case strings.HasPrefix(reason, "could not run"):
		return 3, "The file could not be executed (a missing interpreter or a binary for another system?)."
	case strings.HasPrefix(reason, "probe cancelled"):
		return 3, "The probe was interrupted."
	}
	return 0, ""
}

// wrap breaks s into lines of at most width bytes at spaces (a longer word
// stands alone).
func wrap(s string, width int) string {
	var b strings.Builder
	n := 0
	for i, word := range strings.Fields(s) {
		switch {
		case i == 0:
		case n+1+len(word) > width:
			b.WriteByte('\n')
			n = 0
		default:
			b.WriteByte(' ')
			n++
		}
		b.WriteString(word)
		n += len(word)
	}
	return b.String()
}
