package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestBinaryLinksNoTestPackages checks that the shipped binary does not
// link the packages only tests need: the protocol schema and its checker
// (schema, which tests hand to cli.Env and hostclient.Options
// through the hostclient.Checker interface), the fixture server and the
// OAuth test server. (jsonschema-go stays linked: go-sdk's mcp package
// and mcpclient's elicitation defaults use it.)
func TestBinaryLinksNoTestPackages(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go tool:", err)
	}
	const module = "github.com/mcp-sidecar/mcp-sidecar"
	out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}} {{join .Imports " "}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list -deps .: %v", err)
	}
	testOnly := []string{module + "/schema", module + "/internal/testing/fixture", module + "/internal/testing/oauthtest"}
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		pkg, imports := fields[0], fields[1:]
		for _, imp := range imports {
			if slices.Contains(testOnly, imp) {
				t.Errorf("the binary links %s, which only tests need: %s imports it", imp, pkg)
			}
		}
	}
}
