package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/mcp-sidecar/mcp-sidecar/internal/fixture"
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
