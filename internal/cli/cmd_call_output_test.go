package cli_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
)

// goIdentifier matches a qualified Go identifier (package.Name), which
// people reading the commands' output have no use for.
var goIdentifier = regexp.MustCompile(`\b[a-z][a-z0-9]*\.[A-Z][A-Za-z0-9]*\b`)

// indented is the JSON s as call prints a structuredContent alone.
func indented(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Indent(&b, []byte(s), "", "  "); err != nil {
		t.Fatal(err)
	}
	return b.String() + "\n"
}

// TestBinaryCallOutput: call prints a result once: a text block that is
// the JSON of structuredContent is not printed again beside it (a text
// that says something else is kept, with structuredContent below it), and
// nothing in call's output or in any command's help names a Go
// identifier. Before, the echo result came twice and the _meta heading
// read "recomputed with sandbox.BuildMeta".
func TestBinaryCallOutput(t *testing.T) {
	isolate(t)
	bin := binary(t)
	example := bin + " example-server"
	cfg := writeConfig(t, server{name: "plain", spec: fixture.Spec{Tools: []fixture.ToolSpec{{Name: "echo"}}}})

	r := runBin(t, nil, "call", "plain", "echo", `{"text": "hi", "n": 1}`, "--config", cfg)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "{\n  \"text\": \"hi\",\n  \"n\": 1\n}\n") || strings.Count(r.stdout, `"text"`) != 1 {
		t.Errorf("echo: want its JSON once, indented:\n%s", r)
	}
	if !strings.Contains(r.stdout, "\n_meta sent to plain:\n  none\n") {
		t.Errorf("echo: no _meta heading:\n%s", r)
	}
	r = runBin(t, nil, "call", "add", "a=2", "b=40", "--command", example)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "42\n\nstructuredContent:\n  {\n    \"sum\": 42\n  }\n") {
		t.Errorf("add: want the text and structuredContent:\n%s", r)
	}
	if ids := goIdentifier.FindAllString(r.stdout+r.stderr, -1); len(ids) > 0 {
		t.Errorf("call prints Go identifiers %q:\n%s", ids, r)
	}
	for _, cmd := range []string{"doctor", "tools", "list", "call", "resources", "prompts", "login", "logout", "probe-launcher", "completion", "version"} {
		r := runBin(t, nil, "help", cmd)
		if ids := goIdentifier.FindAllString(r.stdout+r.stderr, -1); r.code != 0 || len(ids) > 0 {
			t.Errorf("help %s: exit %d, Go identifiers %q:\n%s", cmd, r.code, ids, r)
		}
	}
}

// TestBinaryCallChecksRequiredArguments: arguments the tool's input schema
// requires are checked before the call, given as key=value or as JSON:
// the message names the missing ones and shows the tool's signature, the
// status is 2, and the server is never called. Before, the call went to
// the server, which answered with its own error (or ran without them).
func TestBinaryCallChecksRequiredArguments(t *testing.T) {
	isolate(t)
	rawLog := filepath.Join(t.TempDir(), "raw.log")
	const twoRequired = `{"name":"move","inputSchema":{"type":"object","properties":{"from":{"type":"string"},"to":{"type":"string"},"force":{"type":"boolean"}},"required":["from","to"]}}`
	cfg := writeConfig(t, server{name: "idx", spec: fixture.Spec{RawLogFile: rawLog, Tools: []fixture.ToolSpec{
		{Def: json.RawMessage(searchTool)}, {Def: json.RawMessage(twoRequired)},
	}}})
	signature := `search(query: string, mode?: "fast"|"slow", limit?: integer, tags?: string[])`
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"call", "search", "limit=3"}, `mcp-sidecar call: tool "search" needs the argument "query": ` + signature},
		{[]string{"call", "idx", "search", `{"limit": 3}`}, `mcp-sidecar call: tool "search" needs the argument "query": ` + signature},
		{[]string{"call", "search"}, `mcp-sidecar call: tool "search" needs the argument "query": ` + signature},
		{[]string{"call", "move", "force=true"}, `mcp-sidecar call: tool "move" needs the arguments "from" and "to": move(from: string, to: string, force?: boolean)`},
		{[]string{"call", "move", "to=b"}, `mcp-sidecar call: tool "move" needs the argument "from": move(from: string, to: string, force?: boolean)`},
	} {
		r := runBin(t, nil, append(tc.args, "--config", cfg)...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want+"\n") {
			t.Errorf("%q: want exit 2 and %q:\n%s", tc.args, tc.want, r)
		}
	}
	if calls := receivedMeta(t, rawLog); len(calls) != 0 {
		t.Errorf("the server was called %d times without its required arguments", len(calls))
	}
	if r := runBin(t, nil, "call", "search", "query=x", "--config", cfg); r.code != 0 {
		t.Errorf("with the required argument: %s", r)
	}
}

// TestBinaryCallPrintsLargeResultWhole: call shows a person the whole
// result, however large and whatever output_token_limit the configuration
// gives: the limits that keep a model's context small are for hosts, and
// a file holding the rest would be gone when the command ends.
func TestBinaryCallPrintsLargeResultWhole(t *testing.T) {
	isolate(t)
	var text strings.Builder
	for i := range 3000 {
		text.WriteString("line " + strconv.Itoa(i+1) + " of a long listing\n")
	}
	result, err := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": text.String()}}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, server{name: "big", spec: fixture.Spec{Raw: &fixture.RawSpec{Results: map[string]json.RawMessage{"tools/call": result}}},
		extra: map[string]any{"output_token_limit": 100}})
	for _, args := range [][]string{{"call", "big", "echo", "--config", cfg}, {"call", "big", "echo", "--json", "--config", cfg}} {
		r := runBin(t, nil, args...)
		if r.code != 0 || !strings.Contains(r.stdout, "line 3000 of a long listing") || strings.Contains(r.stdout, "mcp-sidecar cut") {
			t.Errorf("%v: want the whole result:\n%.500s", args, r)
		}
	}
}
