package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBinaryLinksNoTestPackages checks that the shipped binary does not
// link the packages only tests need: the protocol schema and its checker
// (schema, which tests hand to cli.Env and hostclient.Options through the
// hostclient.Checker interface) and the test doubles under
// internal/testing. (jsonschema-go stays linked: go-sdk's mcp package and
// mcpclient's elicitation defaults use it.)
func TestBinaryLinksNoTestPackages(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go tool:", err)
	}
	const module = "github.com/mcp-sidecar/mcp-sidecar"
	out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}} {{join .Imports " "}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list -deps .: %v", err)
	}
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		pkg, imports := fields[0], fields[1:]
		for _, imp := range imports {
			if imp == module+"/schema" || strings.HasPrefix(imp, module+"/internal/testing/") {
				t.Errorf("the binary links %s, which only tests need: %s imports it", imp, pkg)
			}
		}
	}
}

// TestImportsKeepToFolders checks what the folder names of internal/
// promise (docs/architecture.md): the command table, internal/cli, is
// imported by main alone, and the test doubles under internal/testing by
// tests and by each other, never by a package's own code.
func TestImportsKeepToFolders(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go tool:", err)
	}
	const module = "github.com/mcp-sidecar/mcp-sidecar"
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./...").Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		pkg, imports := fields[0], fields[1:]
		for _, imp := range imports {
			switch {
			case imp == module+"/internal/cli" && pkg != module:
				t.Errorf("%s imports the command table, %s; only main may", pkg, imp)
			case strings.HasPrefix(imp, module+"/internal/testing/") && !strings.HasPrefix(pkg, module+"/internal/testing/"):
				t.Errorf("%s imports the test double %s outside its tests", pkg, imp)
			}
		}
	}
}
