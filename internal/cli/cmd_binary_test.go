package cli_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
)

// TestBinaryCommands runs the commands for people as a person does, on
// the real binary: a call with key=value arguments typed by the tool's
// schema and a suggestion for a misspelt tool, doctor's exit status with
// and without --strict, resource templates, doctor and prompts on a
// server given with --command. (The in-process tests check every message
// against the schema; these check the program people run.)
func TestBinaryCommands(t *testing.T) {
	isolate(t)
	bin := binary(t)
	example := bin + " example-server"
	idx := writeConfig(t, server{name: "idx", spec: fixture.Spec{Tools: []fixture.ToolSpec{{Def: json.RawMessage(searchTool), Behavior: fixture.BehaviorEcho}}}})
	withDown := writeConfig(t,
		server{name: "up", spec: fixture.Spec{ToolCount: 1}},
		server{name: "down", spec: fixture.Spec{ExitAtStart: true}},
	)
	files := writeConfig(t, server{name: "files", spec: fixture.Spec{
		ToolCount:         1,
		ResourceTemplates: []fixture.TemplateSpec{{URITemplate: "file:///{path}", Name: "files", MIMEType: "text/plain", Text: "x"}},
	}})
	for _, tc := range []struct {
		args           []string
		code           int
		stdout, stderr string // parts of each
	}{
		{[]string{"call", "search", "query=a b", "limit=3", "mode=fast", `tags=["x"]`, "--config", idx}, 0,
			indented(t, `{"query":"a b","limit":3,"mode":"fast","tags":["x"]}`), ""},
		{[]string{"call", "idx", "serch", "query=x", "--config", idx}, 1,
			"", `mcp-sidecar call: server "idx" has no tool "serch" (did you mean "search"?); 'mcp-sidecar tools' lists them`},
		{[]string{"call", "search", "limit=many", "--config", idx}, 2, "", `argument "limit": want integer, got "many"`},
		{[]string{"doctor", "--config", withDown}, 0, "down: server \"down\" failed to start", ""},
		{[]string{"doctor", "--strict", "--config", withDown}, 1, "down: server \"down\" failed to start", ""},
		{[]string{"doctor", "--strict", "--config", idx}, 0, "idx     stdio      ready", ""},
		{[]string{"resources", "templates", "--config", files}, 0, "files (1)\n  file:///{path}  files  (text/plain)\n", ""},
		{[]string{"doctor", "--command", example}, 0, "Server given on the command line: mcp-sidecar\n", ""},
		{[]string{"prompts", "get", "gret", "name=Ada", "--command", example}, 1,
			"", `no server has a prompt "gret" (did you mean "greet"?)`},
	} {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(bin, tc.args...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		code := 0
		if err := cmd.Run(); err != nil {
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Fatal(err)
			}
			code = ee.ExitCode()
		}
		r := result{code: code, stdout: stdout.String(), stderr: stderr.String()}
		if r.code != tc.code || !strings.Contains(r.stdout, tc.stdout) || !strings.Contains(r.stderr, tc.stderr) {
			t.Errorf("%q: want exit %d, %q on stdout and %q on stderr: %s", tc.args, tc.code, tc.stdout, tc.stderr, r)
		}
	}

	// doctor --command's table: the server started from the command line.
	out, err := exec.Command(bin, "doctor", "--command", example).Output()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if row := tableRows(t, string(out), "SERVER  ")["mcp-sidecar"]; len(row) < 5 || row[1] != "stdio" || row[2] != "ready" || row[4] != "6" {
		t.Errorf("row %q:\n%s", row, out)
	}
}
