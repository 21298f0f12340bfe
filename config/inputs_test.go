package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const inputsFile = `{
  // as VS Code writes it
  "inputs": [
    {"type": "promptString", "id": "token", "description": "GitHub token", "password": true},
    {"type": "promptString", "id": "org", "description": "Organisation", "default": "acme"},
    {"type": "promptString", "id": "unused", "description": "never referred to"}
  ],
  "servers": {
    "gh": {"type": "http", "url": "https://${input:org}.example.com/mcp", "headers": {"Authorization": "Bearer ${input:token}"}},
    "cli": {"type": "stdio", "command": "gh-mcp", "args": ["--org", "${input:org}"], "env": {"GH_TOKEN": "${input:token}"}},
    "plain": {"type": "stdio", "command": "plain"}
  }
}`

// A VS Code mcp.json's inputs are read, and each server records those it
// uses, with placeholders where their values go until they are given.
func TestInputsDeclaredAndUsed(t *testing.T) {
	path := writeFile(t, t.TempDir(), ".vscode/mcp.json", inputsFile)
	l := Load(FileSources([]string{path}), nil, MapLookup(nil))
	if len(l.Errors) > 0 {
		t.Fatalf("errors: %v", l.Errors)
	}
	acme := "acme"
	token := Input{ID: "token", Description: "GitHub token", Password: true, File: path}
	org := Input{ID: "org", Description: "Organisation", Default: &acme, File: path}
	for name, want := range map[string][]Input{"gh": {org, token}, "cli": {org, token}, "plain": nil} {
		if diff := cmp.Diff(want, l.Servers[name].Inputs); diff != "" {
			t.Errorf("%s: inputs (-want +got):\n%s", name, diff)
		}
	}
	gh := l.Servers["gh"]
	if !strings.Contains(gh.HTTPHeaders["Authorization"], inputMark("token")) || !gh.Valid() {
		t.Errorf("gh before its inputs: %+v", gh)
	}

	values := map[string]string{token.Key(): "ghp_s3cr3tvalue", org.Key(): "octo"}
	got, errs := gh.WithInputs(values)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if got.URL != "https://octo.example.com/mcp" || got.HTTPHeaders["Authorization"] != "Bearer ghp_s3cr3tvalue" || got.Template != gh {
		t.Errorf("gh with its inputs: %+v", got)
	}
	if gh.HTTPHeaders["Authorization"] != "Bearer "+inputMark("token") {
		t.Error("WithInputs changed the definition it was given")
	}
	cli, _ := l.Servers["cli"].WithInputs(values)
	if diff := cmp.Diff([]string{"--org", "octo"}, cli.Args); diff != "" || cli.Env["GH_TOKEN"] != "ghp_s3cr3tvalue" {
		t.Errorf("cli with its inputs: args %v, env %v", cli.Args, cli.Env)
	}
	if diff := cmp.Diff([]string{"octo", "ghp_s3cr3tvalue"}, cli.InputValues(values)); diff != "" {
		t.Errorf("input values (-want +got):\n%s", diff)
	}
	if len(cli.InputDigests) != 2 || strings.Contains(cli.InputDigests["token"], "s3cr3t") {
		t.Errorf("digests %v", cli.InputDigests)
	}
}

// Values that make a definition invalid, or that are missing, are its
// problems, which never quote a value.
func TestWithInputsProblems(t *testing.T) {
	path := writeFile(t, t.TempDir(), ".vscode/mcp.json", inputsFile)
	l := Load(FileSources([]string{path}), nil, MapLookup(nil))
	gh := l.Servers["gh"]
	key := func(id string) string { return path + "\x00" + id }
	for _, tc := range []struct {
		name   string
		values map[string]string
		want   string
	}{
		{"missing", map[string]string{key("token"): "t"}, `server "gh": key "inputs": no value was given for ${input:org}`},
		{"bad host", map[string]string{key("token"): "t", key("org"): "a b/c?x"}, `key "url": must be an http:// or https:// URL with a host (with the values given for its inputs)`},
		{"line break", map[string]string{key("token"): "s3cr3t\r\nX-Evil: 1", key("org"): "o"}, `key "http_headers.Authorization": value contains a line break or NUL byte (with the values given for its inputs)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, errs := gh.WithInputs(tc.values)
			if got != nil || !strings.Contains(errs.Error(), tc.want) || strings.Contains(errs.Error(), "s3cr3t") {
				t.Errorf("WithInputs = %v, %v; want the problem %q", got, errs, tc.want)
			}
		})
	}
}

func TestInputsFileProblems(t *testing.T) {
	for _, tc := range []struct {
		name, content, want string
	}{
		{"pickString", `{"inputs": [{"type": "pickString", "id": "p", "options": ["a"]}], "servers": {"s": {"command": "x", "args": ["${input:p}"]}}}`,
			`F: key "inputs[0].type": "pickString" inputs are not asked by mcp-sidecar, which asks "promptString" ones` + "\n" +
				`F: server "s": key "args[0]": ${input:p} is not declared in the file's "inputs" (a "promptString" input with id "p")`},
		{"duplicate", `{"inputs": [{"type": "promptString", "id": "a"}, {"type": "promptString", "id": "a"}], "servers": {}}`,
			`F: key "inputs[1].id": input "a" is declared twice`},
		{"not an array", `{"inputs": {"a": 1}, "servers": {}}`, `F: key "inputs": expected an array of inputs`},
		{"envFile", `{"inputs": [{"type": "promptString", "id": "f"}], "servers": {"s": {"command": "x", "envFile": "${input:f}"}}}`,
			`F: server "s": key "envFile": cannot use ${input:...}: the file is read before anyone can be asked`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, t.TempDir(), ".vscode/mcp.json", tc.content)
			l := Load(FileSources([]string{path}), nil, MapLookup(nil))
			if diff := cmp.Diff(tc.want, strings.ReplaceAll(l.Errors.Error(), path, "F")); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}
