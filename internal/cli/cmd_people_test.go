package cli_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
)

// searchTool has required and optional arguments, an enum, and a member
// (execution) that a struct of the commands would not know.
const searchTool = `{"name":"search","description":"Search the index.\nMore text.","execution":{"taskSupport":"optional"},
"inputSchema":{"type":"object","properties":{"query":{"type":"string"},"mode":{"enum":["fast","slow"]},"limit":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}}},"required":["query"],"additionalProperties":false}}`

func TestCmdToolsSignaturesAndJSON(t *testing.T) {
	isolate(t)
	cfg := writeConfig(t, server{name: "idx", spec: fixture.Spec{Tools: []fixture.ToolSpec{{Def: json.RawMessage(searchTool), Behavior: fixture.BehaviorEcho}}}})
	r := runCmd(t, nil, "tools", "--config", cfg)
	want := "  search(query: string, mode?: \"fast\"|\"slow\", limit?: integer, tags?: string[])\n      Search the index.\n"
	if r.code != 0 || !strings.Contains(r.stdout, want) {
		t.Errorf("want %q in:\n%s", want, r)
	}
	r = runCmd(t, nil, "tools", "--json", "--config", cfg)
	var doc struct {
		Tools []map[string]json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || len(doc.Tools) != 1 {
		t.Fatalf("%v: %s", err, r)
	}
	if got := compact(t, doc.Tools[0]["execution"]); got != `{"taskSupport":"optional"}` {
		t.Errorf("--json lost the tool's execution member: %q", got)
	}
}

func TestCmdCallByNameWithKeyValues(t *testing.T) {
	isolate(t)
	cfg := writeConfig(t, server{name: "idx", spec: fixture.Spec{Tools: []fixture.ToolSpec{{Def: json.RawMessage(searchTool), Behavior: fixture.BehaviorEcho}}}})
	for _, args := range [][]string{
		{"call", "search", "query=a b", "limit=3", "mode=fast", `tags=["x"]`},
		{"call", "idx", "search", "query=a b", "limit=3", "mode=fast", `tags=["x"]`},
		{"call", "mcp__idx__search", `{"query":"a b","limit":3,"mode":"fast","tags":["x"]}`},
	} {
		r := runCmd(t, nil, append(args, "--config", cfg)...)
		// The echo's text is its structuredContent: shown once, indented.
		if r.code != 0 || !strings.Contains(r.stdout, indented(t, `{"query":"a b","limit":3,"mode":"fast","tags":["x"]}`)) {
			t.Errorf("%q: %s", args, r)
		}
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"call", "serch", "query=x"}, 1, `no server has a tool "serch" (did you mean "search"?)`},
		{[]string{"call", "search", "qurey=x"}, 2, `the tool has no argument "qurey" (did you mean "query"?); its arguments: limit, mode, query, tags`},
		{[]string{"call", "search", "limit=many"}, 2, `argument "limit": want integer, got "many"`},
		{[]string{"call", "idxx", "search"}, 1, `no server "idxx" in the config (servers: idx); did you mean "idx"?`},
	} {
		r := runCmd(t, nil, append(tc.args, "--config", cfg)...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%q: want exit %d and %q: %s", tc.args, tc.code, tc.want, r)
		}
	}
}

func TestCmdDoctorStrictAndWarnings(t *testing.T) {
	isolate(t)
	cfg := writeConfig(t,
		server{name: "noisy", spec: fixture.Spec{ToolCount: 1, BannerLines: []string{"noisy v1 listening on stdio"}}},
		server{name: "down", spec: fixture.Spec{ExitAtStart: true}},
	)
	r := runCmd(t, nil, "doctor", "--config", cfg)
	if r.code != 0 {
		t.Errorf("a failed server that is not required: want exit 0: %s", r)
	}
	for _, want := range []string{"ready (warning)", "Warnings:\n  noisy: works, but printed 1 line on stdout that is not JSON-RPC (skipped); the first:\n    noisy v1 listening on stdio\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stderr, "session=") || strings.Contains(r.stderr, "level=") {
		t.Errorf("slog key=value lines for people:\n%s", r.stderr)
	}
	if r := runCmd(t, nil, "doctor", "--strict", "--config", cfg); r.code != 1 {
		t.Errorf("--strict: want exit 1: %s", r)
	}
}

// TestCmdDoctorDiscovery: with no --config, doctor finds Claude Code's
// files (user, project two directories up, local) and says where each
// server came from and what replaced what.
func TestCmdDoctorDiscovery(t *testing.T) {
	isolate(t)
	home, root := os.Getenv("HOME"), t.TempDir()
	cwd := filepath.Join(root, "a", "b")
	if err := os.MkdirAll(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	entry := func(name string) string {
		c := fixture.Config(name, fixture.Spec{ToolCount: 1})
		b, _ := json.Marshal(map[string]any{"type": "stdio", "command": c.Command, "args": c.Args, "env": c.Env})
		return string(b)
	}
	// The user approved the project's .mcp.json servers in Claude Code.
	writeFile(t, filepath.Join(home, ".claude.json"), `{"mcpServers": {"shared": `+entry("shared")+`},
"projects": {"`+root+`": {"mcpServers": {"mine": `+entry("mine")+`}, "hasTrustDialogAccepted": true, "enabledMcpjsonServers": ["shared", "bad"]}}}`, 0o600)
	writeFile(t, filepath.Join(root, ".mcp.json"), `{"mcpServers": {"shared": `+entry("shared")+`, "bad": {"command": "x", "url": "http://h/mcp"}}}`, 0o600)
	t.Chdir(cwd)
	r := runCmd(t, nil, "doctor")
	for _, want := range []string{
		"Config files read (later ones win):\n",
		"  " + filepath.Join(home, ".claude.json") + " (Claude Code, user scope): shared\n",
		"  " + filepath.Join(root, ".mcp.json") + " (Claude Code, project scope): bad, shared\n",
		"  " + filepath.Join(home, ".claude.json") + " (Claude Code, local scope, project " + root + "): mine\n",
		"  shared: " + filepath.Join(root, ".mcp.json") + " (Claude Code, project scope) replaces " + filepath.Join(home, ".claude.json") + " (Claude Code, user scope)\n",
		`server "bad": key "url": both command and url are set`,
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	rows := tableRows(t, r.stdout, "SERVER  ")
	for name, status := range map[string]string{"bad": "invalid", "mine": "ready", "shared": "ready"} {
		if row := rows[name]; len(row) < 3 || row[2] != status {
			t.Errorf("row %s = %q, want %s", name, row, status)
		}
	}
}

// TestBinaryServersWithoutConfig: --command and --url try a server with no
// config, for tools, call, resources and prompts; no secret of a URL is
// printed by doctor, in text or JSON.
func TestBinaryServersWithoutConfig(t *testing.T) {
	isolate(t)
	bin := binary(t)
	example := bin + " example-server"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"tools", "--command", example}, "  add(a: number, b: number)\n"},
		{[]string{"call", "add", "a=2", "b=40", "--command", example}, "42\n"},
		{[]string{"resources", "--command", example}, "  example://readme  readme  (text/plain)\n"},
		{[]string{"resources", "read", "example://readme", "--command", example}, "example"},
		{[]string{"prompts", "--command", example}, "  greet(name)\n"},
		{[]string{"prompts", "get", "greet", "name=Ada", "--command", example}, "Ada"},
	} {
		// In process, so that every message is checked against the schema.
		if r := runCmd(t, nil, tc.args...); r.code != 0 || !strings.Contains(r.stdout, tc.want) {
			t.Errorf("%q: want %q in:\n%s", tc.args, tc.want, r)
		}
	}
	if out, err := exec.Command(bin, "tools", "--command", example).CombinedOutput(); err != nil || !strings.Contains(string(out), "  add(a: number, b: number)\n") {
		t.Errorf("the binary's tools --command: %v\n%s", err, out)
	}

	// --url with --header, against a Streamable HTTP server that wants it.
	s := mcp.NewServer(&mcp.Implementation{Name: "web"}, nil)
	s.AddTool(&mcp.Tool{Name: "ping", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "pong"}}}, nil
	})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Key") != "k1" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		handler.ServeHTTP(w, r)
	}))
	defer srv.Close()
	if r := runCmd(t, nil, "call", "ping", "--url", srv.URL+"/mcp", "--header", "X-Key: k1"); r.code != 0 || !strings.Contains(r.stdout, "pong") {
		t.Errorf("--url --header:\n%s", r)
	}
	if r := runCmd(t, nil, "doctor", "--url", srv.URL+"/mcp"); !strings.Contains(r.stdout+r.stderr, "answered 401 Unauthorized: the server needs authorization") {
		t.Errorf("doctor --url without the header:\n%s", r)
	}

	// Secrets of URLs: a refused port and a 404, in text and JSON.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String()
	ln.Close()
	const query, pass = "qs3cr3t-cli-1", "ps3cr3t-cli-2"
	for _, base := range []string{refused, srv.URL} {
		u := strings.Replace(base, "://", "://ann:"+pass+"@", 1) + "/nope?token=" + query
		for _, extra := range [][]string{nil, {"--json"}} {
			r := runCmd(t, nil, append([]string{"doctor", "--url", u}, extra...)...)
			out := r.stdout + r.stderr
			if strings.Contains(out, query) || strings.Contains(out, pass) {
				t.Errorf("doctor %v shows a secret of the URL:\n%s", extra, out)
			}
			if !strings.Contains(out, "REDACTED") {
				t.Errorf("doctor %v does not name the URL at all:\n%s", extra, out)
			}
		}
	}
}

// TestCmdDoctorProjectTrust: in a freshly cloned repository, doctor finds
// the servers of its .mcp.json and .cursor/mcp.json and does not start
// them (no approval in Claude Code, none readable for Cursor): it lists
// them as untrusted with the reason and the fix, and --trust-project runs
// them. A command naming one says why it is not there.
func TestCmdDoctorProjectTrust(t *testing.T) {
	isolate(t)
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	pids := t.TempDir()
	entry := func(name string) string {
		c := fixture.Config(name, fixture.Spec{ToolCount: 1, PIDFile: filepath.Join(pids, name)})
		b, _ := json.Marshal(map[string]any{"command": c.Command, "args": c.Args, "env": c.Env})
		return string(b)
	}
	writeFile(t, filepath.Join(root, ".mcp.json"), `{"mcpServers": {"repo-srv": `+entry("repo-srv")+`}}`, 0o600)
	if err := os.MkdirAll(filepath.Join(root, ".cursor"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, ".cursor", "mcp.json"), `{"mcpServers": {"cursor-srv": `+entry("cursor-srv")+`}}`, 0o600)
	t.Chdir(root)
	started := func() []string {
		entries, _ := os.ReadDir(pids)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		return names
	}

	r := runCmd(t, nil, "doctor")
	if r.code != 0 {
		t.Errorf("untrusted servers are not a failure: %s", r)
	}
	for _, want := range []string{
		"  " + filepath.Join(root, ".mcp.json") + " (Claude Code, project scope): not trusted: repo-srv\n",
		"\nNot trusted (servers of the project's own files, not started):\n" +
			"  cursor-srv: " + filepath.Join(root, ".cursor", "mcp.json") + " (Cursor, project scope): Cursor records no approval of project servers that mcp-sidecar can read\n" +
			"  repo-srv: " + filepath.Join(root, ".mcp.json") + " (Claude Code, project scope): not approved in Claude Code, whose trust dialog was not accepted for this project\n" +
			"  Approve them in Claude Code or trust the project's Cursor and VS Code files with 'mcp-sidecar trust', or pass --trust-project to run them (Cursor and VS Code files stay trusted until they change).\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	rows := tableRows(t, r.stdout, "SERVER  ")
	for _, name := range []string{"cursor-srv", "repo-srv"} {
		if row := rows[name]; len(row) < 3 || row[2] != "untrusted" {
			t.Errorf("row %s = %q, want untrusted", name, row)
		}
	}
	if s := started(); len(s) != 0 {
		t.Errorf("started %v before any approval", s)
	}

	r = runCmd(t, nil, "tools", "--server", "repo-srv")
	want := `mcp-sidecar tools: server "repo-srv" of ` + filepath.Join(root, ".mcp.json") + " (Claude Code, project scope) is not trusted (not approved in Claude Code, whose trust dialog was not accepted for this project): approve it in Claude Code, or pass --trust-project to run it this once\n"
	if r.code != 1 || !strings.Contains(r.stderr, want) {
		t.Errorf("tools --server repo-srv: want exit 1 and %q: %s", want, r)
	}

	r = runCmd(t, nil, "doctor", "--trust-project", "--json")
	var rep struct {
		Untrusted []any `json:"untrusted"`
		Servers   []struct{ Name, Status string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 0 {
		t.Fatalf("%v: %s", err, r)
	}
	for _, s := range rep.Servers {
		if s.Status != "ready" {
			t.Errorf("--trust-project: %s is %s", s.Name, s.Status)
		}
	}
	if len(rep.Untrusted) != 0 || len(rep.Servers) != 2 {
		t.Errorf("--trust-project: %+v", rep)
	}
	if diff := cmp.Diff([]string{"cursor-srv", "repo-srv"}, started()); diff != "" {
		t.Errorf("--trust-project started (-want +got):\n%s", diff)
	}
}

// TestCmdExitPolicy: a command fails for a config error of a server it
// uses and not for one of a server it does not (a listing shows it):
// tools lists every server unless --server narrows it, call uses the
// tool's server, doctor checks everything. Before, tools --server failed for
// another server's error while call did not.
func TestCmdExitPolicy(t *testing.T) {
	isolate(t)
	cfg := writeConfig(t,
		server{name: "idx", spec: fixture.Spec{Tools: []fixture.ToolSpec{{Def: json.RawMessage(searchTool), Behavior: fixture.BehaviorEcho}}}},
		server{name: "bad", spec: fixture.Spec{}, extra: map[string]any{"url": "http://127.0.0.1:9/mcp"}},
	)
	const shown = `server "bad": key "url": both command and url are set`
	for _, tc := range []struct {
		args  []string
		code  int
		shown bool
	}{
		{[]string{"tools"}, 1, true},
		{[]string{"tools", "--server", "idx"}, 0, true},
		{[]string{"call", "idx", "search", "query=x"}, 0, false},
		{[]string{"call", "search", "query=x"}, 0, false},
		{[]string{"call", "bad", "search", "query=x"}, 1, true},
		{[]string{"doctor"}, 1, true},
	} {
		r := runCmd(t, nil, append(tc.args, "--config", cfg)...)
		if r.code != tc.code || strings.Contains(r.stdout+r.stderr, shown) != tc.shown {
			t.Errorf("%q: want exit %d, %q shown %v: %s", tc.args, tc.code, shown, tc.shown, r)
		}
	}
}

// TestCmdDoctorEveryServerInvalid: with no server to start, doctor still
// judges the launcher. Before, it printed an empty "Launcher:" line.
func TestCmdDoctorEveryServerInvalid(t *testing.T) {
	isolate(t)
	cfg := writeConfig(t, server{name: "bad", spec: fixture.Spec{}, extra: map[string]any{"url": "http://127.0.0.1:9/mcp"}})
	r := runCmd(t, nil, "doctor", "--config", cfg)
	if want := "\nLauncher: unavailable (none given; try --launcher PATH)\n"; r.code != 1 || !strings.Contains(r.stdout, want) {
		t.Errorf("want exit 1 and %q: %s", want, r)
	}
}
