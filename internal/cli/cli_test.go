package cli

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestParseFlags(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		pos     []string
		json    bool
		configs []string
	}{
		{nil, []string{}, false, nil},
		{[]string{"srv", "tool"}, []string{"srv", "tool"}, false, nil},
		{[]string{"srv", "--json", "tool", `{"a":1}`}, []string{"srv", "tool", `{"a":1}`}, true, nil},
		{[]string{"--config", "a", "srv", "--config=b"}, []string{"srv"}, false, []string{"a", "b"}},
		{[]string{"srv", "-", "--json"}, []string{"srv", "-"}, true, nil},
		{[]string{"srv", "--", "--json"}, []string{"srv", "--json"}, false, nil},
	} {
		fs := newFlagSet()
		asJSON := fs.Bool("json", false, "")
		configs := fs.StringArray("config", nil, "")
		var out bytes.Buffer
		env := Env{Stdout: &out, Stderr: &out}
		if code, done := parseFlags(&env, "call", fs, tc.args, 0, -1); done {
			t.Errorf("%q: exit %d: %s", tc.args, code, out.String())
			continue
		}
		if !cmp.Equal(fs.Args(), tc.pos) || *asJSON != tc.json || !cmp.Equal(*configs, tc.configs, cmpopts.EquateEmpty()) {
			t.Errorf("%q: positional %q, json %v, configs %q; want %q, %v, %q", tc.args, fs.Args(), *asJSON, *configs, tc.pos, tc.json, tc.configs)
		}
	}
	var out bytes.Buffer
	code, done := parseFlags(&Env{Stdout: &out, Stderr: &out}, "call", newFlagSet(), []string{"srv", "--nope"}, 0, -1)
	if !done || code != exitUsage {
		t.Errorf("an unknown flag after a positional argument: exit %d, done %v", code, done)
	}
	want := "mcp-sidecar call: unknown flag: --nope\nUsage: mcp-sidecar call [SERVER] TOOL [ARGS...] [flags] (see 'mcp-sidecar help call')\n"
	if out.String() != want {
		t.Errorf("unknown flag: got %q, want %q", out.String(), want)
	}
}

func TestLastStderrLine(t *testing.T) {
	for _, tc := range []struct{ err, forwarded, want string }{
		{`server "x": exited during startup (exit status 3); stderr:` + "\nfirst\nlast one\n\n", "", "last one"},
		{`server "x": did not answer initialize in time`, "forwarded line", "forwarded line"},
		{"", "", ""},
	} {
		if got := lastStderrLine(tc.err, tc.forwarded); got != tc.want {
			t.Errorf("lastStderrLine(%q, %q) = %q, want %q", tc.err, tc.forwarded, got, tc.want)
		}
	}
	if got := errorSummary("server \"x\": exited (exit status 3); stderr:\nboom\n"); got != `server "x": exited (exit status 3)` {
		t.Errorf("errorSummary = %q", got)
	}
}

// Every reason the probe gives maps to the check that failed and advice.
func TestExplainProbe(t *testing.T) {
	for reason, check := range map[string]int{
		"not absolute":                   1,
		"not valid UTF-8":                1,
		"not found":                      2,
		"a directory":                    2,
		"not a regular file":             2,
		"not executable":                 2,
		"writable by group or others":    2,
		"cannot stat: permission denied": 2,
		"cannot read file identity":      2,
		"timed out after 5s":             3,
		"exited with status 1":           3,
		"killed by signal killed":        3,
		"help output does not mention --sandbox-state-json": 3,
		"could not run: exec format error":                  3,
		"probe cancelled: context canceled":                 3,
	} {
		got, advice := explainProbe("/x/codex", reason)
		if got != check || advice == "" {
			t.Errorf("%q: check %d, advice %q; want check %d", reason, got, advice, check)
		}
	}
}

func TestTTYProgress(t *testing.T) {
	var buf bytes.Buffer
	w := &lockedWriter{w: &buf}
	p := newTTYProgress(w, []string{"a", "bb"}, 40, painter{})
	p.add("a", "starting")
	p.add("bb", "starting")
	tools := 3
	now := time.Now()
	p.update("a", &serverRun{status: "ready", tools: &tools, began: now, ended: now.Add(1500 * time.Millisecond)})
	p.update("bb", &serverRun{status: "failed", err: "server \"bb\": exited; stderr:\nfatal: a very long explanation that does not fit in forty columns\n", began: now, ended: now})
	p.finish()
	p.finish() // idempotent
	out := buf.String()
	for _, want := range []string{
		"\r\x1b[2K  a   starting",
		"\x1b[2A\r\x1b[2K  a   ready     1.5s, 3 tools\n",
		"\r\x1b[2K  bb  FAILED    0ms: fatal: a very long\n", // cut at 39 columns
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%q", want, out)
		}
	}
	n := buf.Len()
	p.update("a", &serverRun{status: "failed"})
	if buf.Len() != n {
		t.Error("the display drew after finish")
	}
}

func TestPlainProgress(t *testing.T) {
	var buf bytes.Buffer
	p := newPlainProgress(&buf, []string{"a", "off"})
	p.add("off", "disabled")
	p.update("a", &serverRun{status: "starting", began: time.Now()})
	p.add("a", "starting")
	p.finish()
	want := "off  disabled\na    starting\n"
	if buf.String() != want {
		t.Errorf("plain progress = %q, want %q", buf.String(), want)
	}
}

func TestWrap(t *testing.T) {
	for _, tc := range []struct {
		in    string
		width int
		want  string
	}{
		{"a bb ccc dddd", 6, "a bb\nccc\ndddd"},
		{"averyverylongword x", 4, "averyverylongword\nx"},
		{"", 10, ""},
		{"  spaced   out  ", 20, "spaced out"},
	} {
		if got := wrap(tc.in, tc.width); got != tc.want {
			t.Errorf("wrap(%q, %d) = %q, want %q", tc.in, tc.width, got, tc.want)
		}
	}
}

// TestServerNames: a server given with --command is named after the
// package or program it runs, not its last argument; one given with --url
// after its host, and a loopback address is localhost and the port.
func TestServerNames(t *testing.T) {
	for cmd, want := range map[string]string{
		"npx -y @modelcontextprotocol/server-filesystem /work":                             "server-filesystem",
		"npx -y @upstash/context7-mcp@latest":                                              "context7-mcp",
		"npx -p @x/pkg mcp-cmd --port 3":                                                   "mcp-cmd",
		"uvx mcp-server-git --repository .":                                                "mcp-server-git",
		"uvx --from mcp-server-x mcp-x":                                                    "mcp-x",
		"uv run --with mcp server.py":                                                      "server",
		"python -m mcp_server_time --local-timezone UTC":                                   "mcp_server_time",
		"node /opt/servers/weather.js":                                                     "weather",
		"docker run -i --rm -e GITHUB_TOKEN ghcr.io/github/github-mcp-server:latest stdio": "github-mcp-server",
		"/usr/local/bin/my-server --verbose":                                               "my-server",
		"mcp-sidecar example-server":                                                       "mcp-sidecar",
		"npx":                                                                              "npx",
	} {
		words, err := splitWords(cmd)
		if err != nil {
			t.Fatal(err)
		}
		if got := nameFromCommand(words); got != want {
			t.Errorf("--command %q: named %q, want %q", cmd, got, want)
		}
	}
	for u, want := range map[string]string{
		"https://mcp.linear.app/mcp":        "linear",
		"https://api.githubcopilot.com/mcp": "githubcopilot",
		"https://example.com/mcp":           "example",
		"http://127.0.0.1:9":                "localhost-9",
		"http://localhost/mcp":              "localhost",
		"http://[::1]:8080/mcp":             "localhost-8080",
		"http://10.0.0.5:3000/mcp":          "10-0-0-5-3000",
		"http://myhost:3000/mcp":            "myhost",
		"not a url":                         "server",
	} {
		if got := nameFromURL(u); got != want {
			t.Errorf("--url %q: named %q, want %q", u, got, want)
		}
	}
}

// TestPeopleLog: the sidecar's log records reach people as words: the
// server named once, reasons after a colon, other attributes as phrases,
// and no attribute name with an underscore.
func TestPeopleLog(t *testing.T) {
	for _, tc := range []struct {
		msg   string
		attrs []any
		want  string
	}{
		{"skipped a non-JSON line on the server's stdout", []any{"server", "noisy", "line", "v1 ready", "skipped", 1, "not_logged_before", 0},
			`warning: server "noisy" printed a line on stdout that is not JSON-RPC (skipped): v1 ready` + "\n"},
		{"skipped a non-JSON line on the server's stdout", []any{"server", "noisy", "line", "x", "skipped", 9, "not_logged_before", 3},
			`warning: server "noisy" printed a line on stdout that is not JSON-RPC (skipped): x (3 more such lines before it not shown)` + "\n"},
		{"non-JSON lines skipped on the server's stdout", []any{"server", "noisy", "skipped", 40, "not_logged", 30},
			`warning: server "noisy" printed 40 lines on stdout that are not JSON-RPC in all, 30 of them not shown` + "\n"},
		{"launcher unavailable", []any{"path", "/opt/codex", "reason", "not executable"},
			"warning: launcher unavailable: not executable (path /opt/codex)\n"},
		{"credentials store", []any{"server", "linear", "session", "s1", "err", "disk full"},
			`warning: server "linear": credentials store: disk full` + "\n"},
		{"host meta key dropped", []any{"server", "x", "tool", "t", "key", "codex/sandbox-state"},
			`warning: server "x": host meta key dropped (tool t, key codex/sandbox-state)` + "\n"},
	} {
		var b bytes.Buffer
		l := newPeopleLog(&b)
		slog.New(l).Warn(tc.msg, tc.attrs...)
		if diff := cmp.Diff(tc.want, b.String()); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.msg, diff)
		}
	}
	var b bytes.Buffer
	l := newPeopleLog(&b)
	l.setQuietStdout()
	slog.New(l).Warn("skipped a non-JSON line on the server's stdout", "server", "noisy", "line", "x")
	if b.Len() != 0 {
		t.Errorf("quiet: %q", b.String())
	}
}
