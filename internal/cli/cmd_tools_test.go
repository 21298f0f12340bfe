package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
)

type toolsJSON struct {
	Servers []struct {
		Name    string `json:"name"`
		State   string `json:"state"`
		Catalog string `json:"catalog"`
		Tools   int    `json:"tools"`
		Error   string `json:"error"`
		Cache   struct {
			State string `json:"state"`
			Tools int    `json:"tools"`
		} `json:"cache"`
		CacheAfter struct {
			State string `json:"state"`
			Tools int    `json:"tools"`
		} `json:"cacheAfter"`
	} `json:"servers"`
	Tools []struct {
		Name   string `json:"name"`
		Server string `json:"server"`
		Tool   string `json:"tool"`
	} `json:"tools"`
}

func decodeTools(t *testing.T, r result) toolsJSON {
	t.Helper()
	var v toolsJSON
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, r)
	}
	return v
}

// lines counts the lines of a fixture's count file (0 when absent).
func lines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

func TestCmdTools(t *testing.T) {
	isolate(t)
	inits := filepath.Join(t.TempDir(), "inits")
	cfg := writeConfig(t,
		server{name: "alpha", spec: fixture.Spec{InitCountFile: inits, Tools: []fixture.ToolSpec{
			{Def: json.RawMessage(`{"name":"search","description":"Search the things\nSecond line","inputSchema":{"type":"object"}}`)},
			{Name: "fetch"},
		}}},
		server{name: "beta", spec: fixture.Spec{ToolCount: 3}, extra: map[string]any{"enabled_tools": []string{"tool_1"}}},
	)

	// First run: nothing cached; the live listing fills the cache.
	r := runCmd(t, nil, "tools", "--json", "--config", cfg)
	if r.code != 0 {
		t.Fatalf("want exit 0: %s", r)
	}
	v := decodeTools(t, r)
	var names []string
	for _, tool := range v.Tools {
		names = append(names, tool.Name)
	}
	if diff := cmp.Diff([]string{"mcp__alpha__fetch", "mcp__alpha__search", "mcp__beta__tool_1"}, names); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	type state struct{ Name, State, Catalog, Cache, CacheAfter string }
	var got []state
	for _, s := range v.Servers {
		got = append(got, state{s.Name, s.State, s.Catalog, s.Cache.State, s.CacheAfter.State})
	}
	want := []state{{"alpha", "ready", "live", "miss", "hit"}, {"beta", "ready", "live", "miss", "hit"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("servers (-want +got):\n%s", diff)
	}

	// Second run, as a table: the cache entry is there, with every tool the
	// server listed (filters apply after the cache).
	r = runCmd(t, nil, "tools", "--config", cfg)
	if r.code != 0 {
		t.Fatalf("want exit 0: %s", r)
	}
	for _, want := range []string{
		"alpha (stdio, ready, catalog live, 2 tools; disk cache: hit, 2 tools, ",
		"beta (stdio, ready, catalog live, 1 tool; disk cache: hit, 3 tools, ",
		"  search()\n      Search the things\n",
		"  fetch()\n",
		"  tool_1(x?: string)\n      generated tool 1\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "tool_0") {
		t.Errorf("a filtered tool is listed:\n%s", r.stdout)
	}

	// --server limits the session; --cached leaves a cached stdio server
	// dormant: its process never starts.
	before := lines(t, inits)
	r = runCmd(t, nil, "tools", "--json", "--cached", "--server", "alpha", "--config", cfg)
	if r.code != 0 {
		t.Fatalf("--cached: want exit 0: %s", r)
	}
	v = decodeTools(t, r)
	if len(v.Servers) != 1 || v.Servers[0].Name != "alpha" || v.Servers[0].State != "dormant" || v.Servers[0].Catalog != "cached" || len(v.Tools) != 2 {
		t.Errorf("--cached --server alpha: %+v", v)
	}
	if n := lines(t, inits); n != before {
		t.Errorf("alpha was initialized %d more times in a lazy session", n-before)
	}
}

func TestCmdToolsFailures(t *testing.T) {
	isolate(t)
	cfg := writeConfig(t,
		server{name: "ok", spec: fixture.Spec{ToolCount: 1}},
		server{name: "down", spec: fixture.Spec{ExitAtStart: true, StderrLines: []string{"no credentials"}}},
	)
	r := runCmd(t, nil, "tools", "--config", cfg)
	if r.code != 1 {
		t.Fatalf("want exit 1 with a failed server: %s", r)
	}
	for _, want := range []string{"down (stdio, failed, catalog none, 0 tools", "last stderr line: fixture: exiting at start", "  tool_0(x?: string)\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}

	r = runCmd(t, nil, "tools", "--server", "nope", "--config", cfg)
	if r.code != 1 || !strings.Contains(r.stderr, `no server "nope" in the config (servers: down, ok)`) {
		t.Errorf("unknown --server: %s", r)
	}
}

func TestCmdToolsSearch(t *testing.T) {
	isolate(t)
	def := func(name, desc string) fixture.ToolSpec {
		return fixture.ToolSpec{Def: json.RawMessage(`{"name":"` + name + `","description":"` + desc + `","inputSchema":{"type":"object"}}`)}
	}
	cfg := writeConfig(t,
		server{name: "gh", spec: fixture.Spec{Tools: []fixture.ToolSpec{
			def("create_pull_request", "Create a new pull request in a GitHub repository. More text."),
			def("list_issues", "List issues in a GitHub repository."),
		}}},
		server{name: "fs", spec: fixture.Spec{Tools: []fixture.ToolSpec{def("read_file", "Read a file.")}}},
	)
	r := runCmd(t, nil, "tools", "--config", cfg, "--search", "open a PR", "--limit", "1")
	if r.code != 0 {
		t.Fatalf("want exit 0: %s", r)
	}
	fields := strings.Fields(r.stdout)
	if len(fields) < 3 || fields[0] != "1" || fields[1] != "mcp__gh__create_pull_request" ||
		!strings.HasSuffix(strings.TrimSpace(r.stdout), "Create a new pull request in a GitHub repository.") || strings.Count(r.stdout, "\n") != 1 {
		t.Errorf("--search output:\n%s", r.stdout)
	}

	r = runCmd(t, nil, "tools", "--config", cfg, "--json", "--search", "/^mcp__gh__/")
	var res struct {
		Results []struct{ Name, Description string } `json:"results"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || r.code != 0 {
		t.Fatalf("--json --search: %v\n%s", err, r)
	}
	var names []string
	for _, x := range res.Results {
		names = append(names, x.Name)
	}
	if diff := cmp.Diff([]string{"mcp__gh__create_pull_request", "mcp__gh__list_issues"}, names); diff != "" {
		t.Errorf("regex results (-want +got):\n%s", diff)
	}

	r = runCmd(t, nil, "tools", "--config", cfg, "--search", "spreadsheet")
	if r.code != 0 || !strings.Contains(r.stdout, `No tool matches "spreadsheet"`) {
		t.Errorf("no match: %s", r)
	}
	r = runCmd(t, nil, "tools", "--config", cfg, "--search", "/(/")
	if r.code != 1 || !strings.Contains(r.stderr, "bad regular expression") {
		t.Errorf("bad regex: %s", r)
	}
}
