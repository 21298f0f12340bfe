package cli_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/mcp-sidecar/mcp-sidecar/internal/cli"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
	"github.com/mcp-sidecar/mcp-sidecar/schema"
)

// server is one entry of a test config: a fixture server, plus extra
// Codex keys (required, enabled_tools, ...).
type server struct {
	name  string
	spec  fixture.Spec
	extra map[string]any
}

// writeConfig writes a Codex config.toml of fixture servers in a fresh
// directory and returns its path.
func writeConfig(t *testing.T, servers ...server) string {
	t.Helper()
	table := map[string]any{}
	for _, s := range servers {
		cfg := fixture.Config(s.name, s.spec)
		entry := map[string]any{"command": cfg.Command, "args": cfg.Args, "env": cfg.Env}
		for k, v := range s.extra {
			entry[k] = v
		}
		table[s.name] = entry
	}
	var b bytes.Buffer
	if err := toml.NewEncoder(&b).Encode(map[string]any{"mcp_servers": table}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "config.toml")
	writeFile(t, path, b.String(), 0o600)
	return path
}

func writeFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	// WriteFile's mode is filtered by the umask; the launcher probe cares.
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// isolate points the catalog cache, Codex's home and HOME at fresh
// directories, so that no test reads or writes the user's.
func isolate(t *testing.T) (cacheDir string) {
	t.Helper()
	cacheDir = t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cacheDir)
	t.Setenv("CODEX_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir()) // ~/.claude.json, ~/.cursor, VS Code's user mcp.json
	// The credentials and the trust record a command writes.
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	return cacheDir
}

type result struct {
	code           int
	stdout, stderr string
}

// runCmd runs the binary's entry point in process, as main does.
func runCmd(t *testing.T, stdin io.Reader, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := runChecked(t, args, stdin, &stdout, &stderr)
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// runChecked runs the program as run does, checking every message between
// the command and its in-process sidecar against the protocol schema.
func runChecked(t *testing.T, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	t.Helper()
	checker, err := schema.NewChecker()
	if err != nil {
		t.Fatal(err)
	}
	env := processEnv(stdin, stdout, stderr)
	env.Checker = checker
	code := cli.Run(args, env)
	if err := checker.Err(); err != nil {
		t.Errorf("mcp-sidecar %s: messages that do not match the protocol schema:\n%v", strings.Join(args, " "), err)
	}
	return code
}

// TestCmdMessagesAreChecked: runCmd's checker sees the messages of the
// command's in-process sidecar. Against a schema in which initialize has
// no clientInfo, the initialize every command sends is a mismatch.
func TestCmdMessagesAreChecked(t *testing.T) {
	isolate(t)
	var doc map[string]any
	if err := json.Unmarshal(schema.Document, &doc); err != nil {
		t.Fatal(err)
	}
	delete(doc["$defs"].(map[string]any)["InitializeParams"].(map[string]any)["properties"].(map[string]any), "clientInfo")
	altered, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	model, err := schema.Compile(altered)
	if err != nil {
		t.Fatal(err)
	}
	checker := schema.NewCheckerOf(model)
	var stdout, stderr bytes.Buffer
	env := processEnv(nil, &stdout, &stderr)
	env.Checker = checker
	if code := cli.Run([]string{"tools", "--config", writeConfig(t, server{name: "a", spec: fixture.Spec{Tools: []fixture.ToolSpec{{Name: "echo"}}}})}, env); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	if err := checker.Err(); err == nil || !strings.Contains(err.Error(), `unexpected additional properties ["clientInfo"]`) {
		t.Errorf("checker: %v, want the command's clientInfo reported", err)
	}
}

func (r result) String() string {
	return "exit " + strconv.Itoa(r.code) + "\n--- stdout:\n" + r.stdout + "--- stderr:\n" + r.stderr
}

// tableRows parses a whitespace-aligned table that starts with a line
// beginning with header, up to the first blank line: each row's cells,
// keyed by the row's first cell.
func tableRows(t *testing.T, out, header string) map[string][]string {
	t.Helper()
	lines := strings.Split(out, "\n")
	start := -1
	for i, l := range lines {
		if strings.HasPrefix(l, header) {
			start = i
			break
		}
	}
	if start < 0 {
		t.Fatalf("no table with header %q in:\n%s", header, out)
	}
	rows := map[string][]string{}
	for _, l := range lines[start+1:] {
		if strings.TrimSpace(l) == "" {
			break
		}
		f := strings.Fields(l)
		rows[f[0]] = f
	}
	return rows
}

func TestCmdHelp(t *testing.T) {
	for _, cmd := range []string{"doctor", "list", "tools", "call", "resources", "prompts", "login", "logout", "probe-launcher", "completion"} {
		t.Run(cmd, func(t *testing.T) {
			for _, args := range [][]string{{cmd, "--help"}, {cmd, "-h"}, {"help", cmd}} {
				r := runCmd(t, nil, args...)
				if r.code != 0 {
					t.Fatalf("%v: %s", args, r)
				}
				// -h prints to stderr as flag does; help prints to stdout.
				out := r.stdout + r.stderr
				for _, want := range []string{"Usage: mcp-sidecar " + cmd, "Examples:\n  mcp-sidecar " + cmd, "Flags:"} {
					if !strings.Contains(out, want) {
						t.Errorf("%v: output lacks %q:\n%s", args, want, out)
					}
				}
				// The usage line and the list of flags spell each flag alike.
				usage, flags, _ := strings.Cut(out, "\nFlags:\n")
				usage, _, _ = strings.Cut(usage, "\n\n")
				for _, f := range regexp.MustCompile(`--[a-z-]+( [A-Z]+)?`).FindAllString(usage, -1) {
					if !regexp.MustCompile(`(?m)^ +(-[a-z], )?` + regexp.QuoteMeta(f) + `( |$)`).MatchString(flags) {
						t.Errorf("%v: the usage line has %q, the list of flags does not:\n%s", args, f, out)
					}
				}
				if strings.Contains(flags, "[=") {
					t.Errorf("%v: flags spelt with [=...]:\n%s", args, flags)
				}
			}
		})
	}
}

func TestCmdVersionAndUsage(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"-version"}, {"version"}} {
		r := runCmd(t, nil, args...)
		if r.code != 0 || r.stdout != "mcp-sidecar "+version+"\n" {
			t.Errorf("%v: %s", args, r)
		}
	}
	r := runCmd(t, nil, "--help")
	if r.code != 0 {
		t.Fatalf("--help: %s", r)
	}
	for _, cmd := range []string{"doctor", "tools", "call [SERVER] TOOL", "resources", "prompts", "probe-launcher PATH", "version"} {
		if !strings.Contains(r.stdout, "mcp-sidecar "+cmd) {
			t.Errorf("usage lacks %q:\n%s", cmd, r.stdout)
		}
	}
}

func TestCmdBadCommandLine(t *testing.T) {
	isolate(t)
	for _, args := range [][]string{
		{"doctor", "--no-such-flag"},
		{"doctor", "stray.toml"},
		{"tools", "extra"},
		{"call"},
		{"call", "--command", "x", "--url", "http://h/mcp", "t"},
		{"tools", "--header", "A: b"},
		{"resources", "read"},
		{"prompts", "nope"},
		{"call", "srv", "tool", "not json"},
		{"call", "srv", "tool", "[1,2]"},
		{"call", "srv", "tool", "{}", "extra"},
		{"call", "srv", "tool", "--meta", "[]"},
		{"probe-launcher"},
		{"probe-launcher", "/a", "/b"},
	} {
		r := runCmd(t, strings.NewReader(""), args...)
		if r.code != 2 {
			t.Errorf("%q: want exit 2, got %s", args, r)
		}
		if r.stderr == "" {
			t.Errorf("%q: nothing on stderr", args)
		}
	}
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// binary builds the real mcp-sidecar binary once per test run.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "mcp-sidecar-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "mcp-sidecar")
		out, err := exec.Command("go", "build", "-o", binPath, moduleRoot).CombinedOutput()
		if err != nil {
			buildErr = errors.New(string(out))
		}
	})
	if buildErr != nil {
		t.Fatalf("building the binary: %v", buildErr)
	}
	return binPath
}
