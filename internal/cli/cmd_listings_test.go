package cli_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
)

// runBin runs the real binary with args (stdin empty) and returns what it
// printed and its exit status.
func runBin(t *testing.T, env []string, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(binary(t), args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if env != nil {
		cmd.Env = env
	}
	code := 0
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatal(err)
		}
		code = ee.ExitCode()
	}
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// TestBinaryListingsSkipServersWithoutTheCapability: resources and prompts
// without --server go over every server; a server that offers no
// resources (or prompts) is said so in words and skipped, not an error
// that ends the listing. Before, the first such server ended it with
// "Method not found".
func TestBinaryListingsSkipServersWithoutTheCapability(t *testing.T) {
	isolate(t)
	cfg := writeConfig(t,
		server{name: "aaa", spec: fixture.Spec{ToolCount: 1}},
		server{name: "docs", spec: fixture.Spec{
			Resources:         []fixture.ResourceSpec{{URI: "docs://guide", Name: "guide", MIMEType: "text/plain", Text: "the guide"}},
			ResourceTemplates: []fixture.TemplateSpec{{URITemplate: "docs://page/{n}", Name: "page", Text: "a page"}},
			Prompts:           []fixture.PromptSpec{{Name: "review", Args: []string{"code"}, Text: "Review"}},
		}},
		server{name: "notes", spec: fixture.Spec{
			Resources: []fixture.ResourceSpec{{URI: "notes://today", Name: "today", Text: "buy milk"}},
		}},
		// A server that declares resources and prompts and answers
		// "Method not found" to every listing.
		server{name: "liar", spec: fixture.Spec{Raw: &fixture.RawSpec{}, Capabilities: map[string]json.RawMessage{
			"resources": json.RawMessage(`{}`), "prompts": json.RawMessage(`{}`),
		}}},
	)
	for _, tc := range []struct {
		args   []string
		code   int
		stdout []string // in order
		stderr string
	}{
		{[]string{"resources"}, 0, []string{"docs (1)\n  docs://guide  guide  (text/plain)\n", "notes (1)\n  notes://today  today\n", "No resources offered by: aaa, liar\n"}, ""},
		{[]string{"resources", "templates"}, 0, []string{"docs (1)\n  docs://page/{n}  page\n", "notes (0)\n", "No resource templates offered by: aaa, liar\n"}, ""},
		{[]string{"prompts"}, 0, []string{"docs (1)\n  review(code?)\n", "No prompts offered by: aaa, liar, notes\n"}, ""},
		{[]string{"prompts", "get", "review", "code=x"}, 0, []string{"Review code=x"}, ""},
		// read finds the server that lists the URI.
		{[]string{"resources", "read", "notes://today"}, 0, []string{"buy milk\n"}, ""},
		{[]string{"resources", "read", "docs://page/7"}, 0, []string{"a page\n"}, ""},
		{[]string{"resources", "read", "nope://x"}, 1, nil, `no server lists nope://x (servers with resources: docs, liar, notes): say which with --server`},
		// Naming a server without the capability is an error in words.
		{[]string{"resources", "--server", "aaa"}, 1, nil, `mcp-sidecar resources: server "aaa" offers no resources`},
		{[]string{"prompts", "--server", "aaa"}, 1, nil, `mcp-sidecar prompts: server "aaa" offers no prompts`},
	} {
		r := runBin(t, nil, append(tc.args, "--config", cfg)...)
		at := 0
		for _, want := range tc.stdout {
			i := strings.Index(r.stdout[at:], want)
			if i < 0 {
				t.Errorf("%q: stdout lacks %q (in order):\n%s", tc.args, want, r)
				break
			}
			at += i + len(want)
		}
		if r.code != tc.code || !strings.Contains(r.stderr, tc.stderr) {
			t.Errorf("%q: want exit %d and %q on stderr:\n%s", tc.args, tc.code, tc.stderr, r)
		}
		for _, bad := range []string{"Method not found", "method not found", "-32601"} {
			if strings.Contains(r.stdout+r.stderr, bad) {
				t.Errorf("%q: %q in what people read:\n%s", tc.args, bad, r)
			}
		}
	}
}

// TestBinaryList: 'mcp-sidecar list' lists the servers, as 'claude mcp
// list' and 'codex mcp list' do (not the tools, which 'tools' lists):
// each with whether it started, its tool count, transport and the file
// that defines it; why a server did not start below the table; exit 1
// when one did not, as tools. Before, list was an unknown command.
func TestBinaryList(t *testing.T) {
	isolate(t)
	cfg := writeConfig(t,
		server{name: "ok", spec: fixture.Spec{ToolCount: 2}},
		server{name: "down", spec: fixture.Spec{ExitAtStart: true}},
	)
	r := runBin(t, nil, "list", "--config", cfg)
	if r.code != 1 {
		t.Errorf("want exit 1 with a server down: %s", r)
	}
	rows := tableRows(t, r.stdout, "NAME ")
	if diff := cmp.Diff([]string{"ok", "ready", "2", "stdio", cfg}, rows["ok"]); diff != "" {
		t.Errorf("row ok (-want +got):\n%s\n%s", diff, r)
	}
	if diff := cmp.Diff([]string{"down", "failed", "-", "stdio", cfg}, rows["down"]); diff != "" {
		t.Errorf("row down (-want +got):\n%s\n%s", diff, r)
	}
	for _, want := range []string{"\n  down: server \"down\" failed to start", "\nTheir tools: mcp-sidecar tools."} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r)
		}
	}
	if r := runBin(t, nil, "list", "--server", "ok", "--config", cfg); r.code != 0 || !strings.Contains(r.stdout, "ok  ") || strings.Contains(r.stdout, "down") {
		t.Errorf("list --server ok: %s", r)
	}
	r = runBin(t, nil, "list", "--json", "--config", cfg)
	var doc struct {
		Servers []struct{ Name, State, Source string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || len(doc.Servers) != 2 || doc.Servers[1].Name != "ok" || doc.Servers[1].Source != cfg {
		t.Errorf("list --json: %v\n%s", err, r)
	}
	if r := runBin(t, nil, "--help"); !strings.Contains(r.stdout, "mcp-sidecar list ") {
		t.Errorf("--help lacks list:\n%s", r)
	}
}

// TestCmdListWithNothingToStart: with no server both valid and trusted
// (a project's Cursor file on its first run, or only config errors), list
// still draws each server with why it did not start, the way to trust it,
// and --json the same rows; exit 1.
func TestCmdListWithNothingToStart(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, root string) (source string)
		row   []string // NAME, STATUS, TOOLS, TRANSPORT
		note  string   // below the table
	}{{
		name: "untrusted",
		setup: func(t *testing.T, root string) string {
			c := fixture.Config("cur", fixture.Spec{ToolCount: 1})
			b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"cur": map[string]any{"command": c.Command, "args": c.Args, "env": c.Env}}})
			path := filepath.Join(root, ".cursor", "mcp.json")
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			writeFile(t, path, string(b), 0o600)
			return path
		},
		row:  []string{"cur", "untrusted", "-", "-"},
		note: "'mcp-sidecar trust'",
	}, {
		name: "invalid",
		setup: func(t *testing.T, root string) string {
			path := filepath.Join(os.Getenv("HOME"), ".claude.json")
			writeFile(t, path, `{"mcpServers": {"bad": {"type": "http", "url": "ftp://x"}}}`, 0o600)
			return path
		},
		row:  []string{"bad", "invalid", "-", "-"},
		note: `key "url": must be an http:// or https:// URL`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			isolate(t)
			root := t.TempDir()
			if err := os.MkdirAll(filepath.Join(root, ".git"), 0o755); err != nil {
				t.Fatal(err)
			}
			source := tc.setup(t, root)
			t.Chdir(root)
			r := runCmd(t, nil, "list")
			if r.code != 1 {
				t.Errorf("want exit 1: %s", r)
			}
			rows := tableRows(t, r.stdout, "NAME ")
			if diff := cmp.Diff(tc.row, rows[tc.row[0]][:4]); diff != "" {
				t.Errorf("row (-want +got):\n%s\n%s", diff, r)
			}
			if !strings.Contains(r.stdout, source) || !strings.Contains(r.stdout, "\n  "+tc.row[0]+": ") || !strings.Contains(r.stdout, tc.note) {
				t.Errorf("stdout lacks the source %s, or why %s did not start with %q:\n%s", source, tc.row[0], tc.note, r)
			}
			r = runCmd(t, nil, "list", "--json")
			var doc struct {
				Servers []struct{ Name, State, Source, Error string }
			}
			if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || r.code != 1 {
				t.Fatalf("list --json: exit %d, %v\n%s", r.code, err, r)
			}
			if len(doc.Servers) != 1 || doc.Servers[0].Name != tc.row[0] || doc.Servers[0].State != tc.row[1] ||
				!strings.HasPrefix(doc.Servers[0].Source, source) || !strings.Contains(doc.Servers[0].Error, tc.note) {
				t.Errorf("list --json: %+v\n%s", doc.Servers, r)
			}
		})
	}
}

// TestBinaryVerboseAndStartupTimeout: -v shows the config files read, each
// server's startup and its stderr lines (none of it without -v);
// --startup-timeout bounds every server's startup in place of its
// startup_timeout_sec, shorter or longer, and messages name the flag.
func TestBinaryVerboseAndStartupTimeout(t *testing.T) {
	isolate(t)
	cfg := writeConfig(t, server{name: "chatty", spec: fixture.Spec{ToolCount: 1, StderrLines: []string{"chatty: listening"}}})
	verbose := []string{"Config files read (later ones win):\n  " + cfg + ": chatty\n", "chatty  ready ", `server "chatty" stderr: chatty: listening`}
	for _, args := range [][]string{{"tools", "-v"}, {"call", "--verbose", "tool_0"}, {"resources", "-v"}} {
		r := runBin(t, nil, append(args, "--config", cfg)...)
		for _, want := range verbose {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("%q: stderr lacks %q:\n%s", args, want, r)
			}
		}
		r = runBin(t, nil, append(args[:1:1], "--config", cfg)...)
		for _, unwanted := range verbose {
			if strings.Contains(r.stderr, unwanted) {
				t.Errorf("%q without -v: stderr has %q:\n%s", args[:1], unwanted, r)
			}
		}
	}

	slow := writeConfig(t, server{name: "slow", spec: fixture.Spec{ToolCount: 1, StartDelayMs: 1500}, extra: map[string]any{"startup_timeout_sec": 0.5}})
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"list"}, 1, "within startup_timeout_sec (0.5 s)"},
		{[]string{"list", "--startup-timeout", "60s"}, 0, "slow  ready"},
		{[]string{"list", "--startup-timeout", "200ms"}, 1, "within --startup-timeout (0.2 s)"},
	} {
		r := runBin(t, nil, append(tc.args, "--config", slow)...)
		if r.code != tc.code || !strings.Contains(r.stdout, tc.want) {
			t.Errorf("%q: want exit %d and %q:\n%s", tc.args, tc.code, tc.want, r)
		}
	}
	if r := runBin(t, nil, "list", "--startup-timeout", "-1s", "--config", slow); r.code != 2 {
		t.Errorf("a negative --startup-timeout: %s", r)
	}
}
