package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// fuzzSecret is the value of every variable a fuzzed file may expand; an
// error must never show it unless the input itself contains it.
const fuzzSecret = "fuzz-secret-7f3a"

func fuzzEnv() Lookup {
	return MapLookup(map[string]string{
		"HOME":         "/home/fuzz",
		"TOKEN":        fuzzSecret,
		"SECRET_TOKEN": fuzzSecret,
	})
}

// checkFuzzResult asserts what holds for any input: errors are Errors of
// *Error naming file, no secret value leaks into them or into notes, and
// every returned server is valid and named after its key.
func checkFuzzResult(t *testing.T, input []byte, file string, r parsed) {
	servers, errs := r.valid(), r.errs
	var notes []string
	for _, w := range r.warnings {
		notes = append(notes, w.Error())
	}
	t.Helper()
	err := errs.asError()
	if err != nil {
		var es Errors
		if !errors.As(err, &es) {
			t.Fatalf("error %T is not Errors", err)
		}
		for _, e := range es {
			if e == nil {
				t.Fatal("nil *Error in Errors")
			}
			if e.File != file {
				t.Errorf("error %q names file %q, want %q", e.Error(), e.File, file)
			}
		}
	}
	if !bytes.Contains(input, []byte(fuzzSecret)) {
		if err != nil && strings.Contains(err.Error(), fuzzSecret) {
			t.Errorf("error shows a secret value: %v", err)
		}
		for _, n := range notes {
			if strings.Contains(n, fuzzSecret) {
				t.Errorf("note shows a secret value: %s", n)
			}
		}
	}
	if servers == nil {
		t.Fatal("nil server map")
	}
	for name, c := range servers {
		if c.Name != name || c.Source != file {
			t.Errorf("server %q has Name %q Source %q", name, c.Name, c.Source)
		}
		if err := Validate(c); err != nil {
			t.Errorf("returned server %q is invalid: %v", name, err)
		}
	}
	// Every invalid server's problems are among the errors, so none is
	// dropped silently.
	for name, c := range r.servers {
		for _, p := range c.Problems {
			if p.Server != name {
				t.Errorf("problem %q of server %q names server %q", p.Error(), name, p.Server)
			}
		}
	}
}

func FuzzLoadTOML(f *testing.F) {
	f.Add([]byte("[mcp_servers.a]\ncommand = \"x\"\nargs = [\"y\"]\n[mcp_servers.a.env]\nK = \"v\"\n"))
	f.Add([]byte("[mcp_servers.b]\nurl = \"https://h/mcp\"\nbearer_token = \"t\"\nhttp_headers = { A = \"b\" }\n"))
	f.Add([]byte("model = 1\n[mcp_servers]\nx = 1\n"))
	// The shape check: nesting at and past its limit, and brackets hidden
	// in strings, comments and quoted keys.
	f.Add([]byte("[mcp_servers.x]\ncommand = \"echo\"\nenv = " + strings.Repeat("{a=", 62) + "1" + strings.Repeat("}", 62) + "\n"))
	f.Add([]byte("x = " + strings.Repeat("[", 63) + strings.Repeat("]", 63) + "\n"))
	f.Add([]byte("a" + strings.Repeat(".a", 64) + " = 1\n[[b.c]]\nd = {e = [{}, {f = 1}]}\n"))
	f.Add([]byte(`s = """[[\"""{{` + "\n" + `""""` + "\n" + `t = '''[[` + "\n" + `''''` + "\n" + `u = '[[' # [[` + "\n" +
		`"[[".'{{' = [` + "\n# ]\n1,\n]\nv = {\n w = 1, # {\n}\n"))
	// The file is never written: parseFile takes its content. Only an
	// envFile is read from disk, and nothing writes to this directory.
	path := filepath.Join(f.TempDir(), "config.toml")
	f.Fuzz(func(t *testing.T, data []byte) {
		checkFuzzResult(t, data, path, parseSource(Source{Path: path}, data, fuzzEnv()))
		checkShapeHolds(t, data, true)
	})
}

func FuzzLoadClaudeJSON(f *testing.F) {
	f.Add([]byte(`{"mcpServers": {"a": {"command": "${TOKEN}", "args": ["${X:-d}"], "env": {"K": "${SECRET_TOKEN}"}}}}`))
	f.Add([]byte(`{"mcpServers": {"b": {"type": "http", "url": "https://${TOKEN}/mcp", "headers": {"A": "${NOPE}"}}}}`))
	f.Add([]byte(`{"mcpServers": {"c": {"type": "sse", "url": "x", "disabled": true, "autoApprove": []}}} // c`))
	f.Add([]byte(`{"mcpServers": {"d": {"command": "x", "args": ` + strings.Repeat("[", 62) + strings.Repeat("]", 62) + `}}}`))
	f.Add([]byte(`{"mcpServers": {"[[\"": {"command": "/*[[", "args": ["//{{"]}}, "x": [0, 0, 0, {}]}`))
	// The file is never written: parseFile takes its content. Only an
	// envFile is read from disk, and nothing writes to this directory.
	path := filepath.Join(f.TempDir(), ".mcp.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		checkFuzzResult(t, data, path, parseSource(Source{Path: path}, data, fuzzEnv()))
		checkShapeHolds(t, data, false)
	})
}

func FuzzLoadVSCodeJSON(f *testing.F) {
	f.Add([]byte(`{"servers": {"a": {"type": "stdio", "command": "${workspaceFolder}/x", "envFile": "${env:TOKEN}"}}}`))
	f.Add([]byte(`{"inputs": [], "servers": {"b": {"type": "http", "url": "https://h/mcp", "headers": {"A": "${input:k}"}},}}`))
	f.Add([]byte("/* c */ {\"servers\": {\"c\": {\"command\": \"${userHome}\", \"cwd\": \"${config:x}\"}}}"))
	f.Add([]byte("// [[[\n/* {{ */ {\"servers\": {\"a\": {\"command\": \"x\", \"args\": " + strings.Repeat("[", 61) + strings.Repeat("]", 61) + ",},}}"))
	path := filepath.Join(f.TempDir(), ".vscode", "mcp.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		checkFuzzResult(t, data, path, parseSource(Source{Path: path}, data, fuzzEnv()))
		checkShapeHolds(t, data, false)
	})
}

func FuzzParseInline(f *testing.F) {
	f.Add([]byte(`{"a": {"command": "x", "args": ["y"], "env": {"K": "v"}, "startup_timeout_sec": 1e400}}`))
	f.Add([]byte(`{"b": {"url": "https://h/mcp", "bearer_token": "t", "type": "http"}}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"a": {"command": "x", "args": ` + strings.Repeat("[", 65) + strings.Repeat("]", 65) + `}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkShapeHolds(t, data, false)
		_, err := ParseInline(json.RawMessage(data))
		var errs Errors
		if err != nil && !errors.As(err, &errs) {
			t.Fatalf("error %T is not Errors: %v", err, err)
		}
		checkFuzzResult(t, data, InlineSource, parseInline(json.RawMessage(data), InlineSource))
	})
}
