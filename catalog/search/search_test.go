package search

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcp-sidecar/mcp-sidecar/catalog"
)

// fixedCatalog is a small catalog of three servers whose tools overlap in
// vocabulary the way real catalogs do.
var fixedCatalog = map[string][]string{
	"github": {
		`{"name":"create_issue","description":"Create a new issue in a GitHub repository.","inputSchema":{"type":"object","properties":{"title":{"type":"string","description":"Issue title"},"body":{"type":"string"}}}}`,
		`{"name":"list_issues","description":"List issues in a GitHub repository with filtering options.","inputSchema":{"type":"object","properties":{"state":{"type":"string","enum":["open","closed"]}}}}`,
		`{"name":"create_pull_request","description":"Create a new pull request in a GitHub repository.","inputSchema":{"type":"object","properties":{"head":{"type":"string","description":"The branch where your changes are implemented"},"base":{"type":"string"}}}}`,
		`{"name":"get_file_contents","description":"Get the contents of a file or directory from a GitHub repository.","inputSchema":{"type":"object","properties":{"path":{"type":"string"}}}}`,
	},
	"fs": {
		`{"name":"read_file","description":"Read the complete contents of a file from the file system.","inputSchema":{"type":"object","properties":{"path":{"type":"string"}}}}`,
		`{"name":"write_file","description":"Create a new file or overwrite an existing file with new content.","inputSchema":{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}}}}`,
		`{"name":"list_directory","description":"Get a detailed listing of all files and directories in a specified path.","inputSchema":{"type":"object","properties":{"path":{"type":"string"}}}}`,
		`{"name":"moveFile","title":"Rename","description":"Move or rename files and directories.","inputSchema":{"type":"object","properties":{"source":{"type":"string"},"destination":{"type":"string"}}}}`,
	},
	"browser": {
		`{"name":"browser_take_screenshot","description":"Take a screenshot of the current page. Use browser_snapshot for actions.","inputSchema":{"type":"object","properties":{"fullPage":{"type":"boolean","description":"Capture the whole scrollable page"}}}}`,
		`{"name":"browser_navigate","description":"Navigate to a URL","inputSchema":{"type":"object","properties":{"url":{"type":"string"}}}}`,
		`{"name":"browser_snapshot","description":"Capture accessibility snapshot of the current page, this is better than screenshot","inputSchema":{"type":"object"}}`,
	},
}

var fixedOrder = []string{"browser", "fs", "github"}

// catalogOf parses and qualifies servers' raw tools, in server order.
func catalogOf(t *testing.T, servers map[string][]string, order []string) []catalog.Tool {
	t.Helper()
	var all []catalog.Tool
	for _, s := range order {
		var items []json.RawMessage
		for _, raw := range servers[s] {
			items = append(items, json.RawMessage(raw))
		}
		tools, err := catalog.ParseTools(s, items)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, tools...)
	}
	catalog.Qualify(all, 0)
	return all
}

func fixedIndex(t *testing.T) *Index {
	return New(DefaultRanking()).Update(catalogOf(t, fixedCatalog, fixedOrder))
}

func names(rs []Result) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, r.Name)
	}
	return out
}

func mustSearch(t *testing.T, ix *Index, q string, opt Options) []Result {
	t.Helper()
	rs, err := ix.Search(q, opt)
	if err != nil {
		t.Fatalf("Search(%q): %v", q, err)
	}
	return rs
}

func TestSearchRanksFreeText(t *testing.T) {
	ix := fixedIndex(t)
	tests := []struct {
		query string
		want  []string // the first results, in order
	}{
		// abbreviation through the synonym table
		{"open a PR", []string{"mcp__github__create_pull_request"}},
		// a word of a camelCase name, and the title
		{"rename a file", []string{"mcp__fs__moveFile"}},
		// plural and singular meet (stemming); the name outranks
		// descriptions that mention files
		{"read files", []string{"mcp__fs__read_file"}},
		// the server's name counts: the GitHub file tool before the local one
		{"github file contents", []string{"mcp__github__get_file_contents", "mcp__fs__read_file"}},
		// everyday word through the synonym table
		{"save a file", []string{"mcp__fs__write_file"}},
		{"what is in this folder", []string{"mcp__fs__list_directory"}},
		// parameters are searched too
		{"capture the whole scrollable page", []string{"mcp__browser__browser_take_screenshot"}},
		{"new bug", []string{"mcp__github__create_issue"}},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			got := names(mustSearch(t, ix, tt.query, Options{}))
			if len(got) > len(tt.want) {
				got = got[:len(tt.want)]
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("first results (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSearchResultFields(t *testing.T) {
	ix := fixedIndex(t)
	got := mustSearch(t, ix, "screenshot", Options{Limit: 2})
	want := []Result{
		{Name: "mcp__browser__browser_take_screenshot", Server: "browser", Tool: "browser_take_screenshot", Description: "Take a screenshot of the current page."},
		{Name: "mcp__browser__browser_snapshot", Server: "browser", Tool: "browser_snapshot", Description: "Capture accessibility snapshot of the current page, this is better than screenshot"},
	}
	if diff := cmp.Diff(want, got, cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Score" }, cmp.Ignore())); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	if !(got[0].Score > got[1].Score && got[1].Score > 0) {
		t.Errorf("scores %v, %v: want positive and descending", got[0].Score, got[1].Score)
	}
}

func TestSearchLimitAndFilters(t *testing.T) {
	ix := fixedIndex(t)
	if got := mustSearch(t, ix, "file", Options{}); len(got) != DefaultLimit {
		t.Errorf("default limit: %d results, want %d", len(got), DefaultLimit)
	}
	if got := mustSearch(t, ix, "file", Options{Limit: 2}); len(got) != 2 {
		t.Errorf("limit 2: %d results", len(got))
	}
	got := names(mustSearch(t, ix, "file contents", Options{Servers: []string{"github"}, Limit: 10}))
	for _, n := range got {
		if !strings.HasPrefix(n, "mcp__github__") {
			t.Errorf("servers [github]: got %s", n)
		}
	}
	if len(got) == 0 {
		t.Error("servers [github]: nothing found")
	}
	if got := mustSearch(t, ix, "file", Options{Servers: []string{}}); len(got) != 0 {
		t.Errorf("servers []: %v, want nothing", names(got))
	}
	// Only stop words: nothing to rank, an empty list (not an error).
	if got := mustSearch(t, ix, "the of and", Options{}); got == nil || len(got) != 0 {
		t.Errorf("stop words only: %#v, want an empty list", got)
	}
	for _, q := range []string{"", "   ", "select:", "select: , ", "//"} {
		if _, err := ix.Search(q, Options{}); !errors.Is(err, ErrEmptyQuery) {
			t.Errorf("Search(%q): %v, want ErrEmptyQuery", q, err)
		}
	}
}

func TestSearchRegex(t *testing.T) {
	ix := fixedIndex(t)
	tests := []struct {
		query string
		opt   Options
		want  []string
	}{
		// qualified names, in catalog order
		{"/^mcp__fs__/", Options{Limit: 10}, []string{"mcp__fs__read_file", "mcp__fs__write_file", "mcp__fs__list_directory", "mcp__fs__moveFile"}},
		// case-insensitive; name matches before description-only matches
		{"/SCREENSHOT/", Options{}, []string{"mcp__browser__browser_take_screenshot", "mcp__browser__browser_snapshot"}},
		// the title is matched like a name
		{"/^rename$/", Options{}, []string{"mcp__fs__moveFile"}},
		// descriptions
		{"/pull request/", Options{}, []string{"mcp__github__create_pull_request"}},
		{"/issue|file/", Options{Limit: 3}, []string{"mcp__fs__read_file", "mcp__fs__write_file", "mcp__fs__moveFile"}},
		{"/issue/", Options{Servers: []string{"fs"}}, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, names(mustSearch(t, ix, tt.query, tt.opt))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if _, err := ix.Search("/(unclosed/", Options{}); err == nil || !strings.Contains(err.Error(), "bad regular expression") {
		t.Errorf("bad regex: %v", err)
	}
	if _, err := ix.Search("/"+strings.Repeat("a", MaxRegexBytes+1)+"/", Options{}); err == nil {
		t.Error("over-long regex accepted")
	}
}

func TestSearchSelect(t *testing.T) {
	ix := fixedIndex(t)
	tests := []struct {
		query string
		opt   Options
		want  []string
	}{
		// the order given, whatever the catalog order; unknown names skipped
		{"select:mcp__github__list_issues,mcp__browser__browser_navigate", Options{}, []string{"mcp__github__list_issues", "mcp__browser__browser_navigate"}},
		{"select: mcp__fs__read_file , nope, mcp__fs__read_file", Options{}, []string{"mcp__fs__read_file"}},
		// a raw name selects the tool of that name
		{"select:read_file", Options{}, []string{"mcp__fs__read_file"}},
		// a tool named twice (qualified and raw) is returned once
		{"select:mcp__fs__read_file,read_file,write_file", Options{}, []string{"mcp__fs__read_file", "mcp__fs__write_file"}},
		// every name given, whatever the limit
		{"select:mcp__fs__read_file,mcp__fs__write_file,mcp__fs__list_directory", Options{Limit: 1}, []string{"mcp__fs__read_file", "mcp__fs__write_file", "mcp__fs__list_directory"}},
		// the servers filter still applies
		{"select:mcp__fs__read_file,mcp__github__list_issues", Options{Servers: []string{"github"}}, []string{"mcp__github__list_issues"}},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, names(mustSearch(t, ix, tt.query, tt.opt))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestSelectMissing: Select reports the names that name no tool, and a
// raw name that two servers use selects both tools.
func TestSelectMissing(t *testing.T) {
	servers := map[string][]string{
		"a": {`{"name":"search","description":"Search a.","inputSchema":{"type":"object"}}`, `{"name":"only_a","inputSchema":{"type":"object"}}`},
		"b": {`{"name":"search","description":"Search b.","inputSchema":{"type":"object"}}`},
	}
	ix := New(DefaultRanking()).Update(catalogOf(t, servers, []string{"a", "b"}))
	tests := []struct {
		names       []string
		opt         Options
		want, wantM []string
	}{
		{[]string{"search"}, Options{}, []string{"mcp__a__search", "mcp__b__search"}, nil},
		{[]string{"mcp__b__search", "nope", "only_a", "mcp__a__nope"}, Options{}, []string{"mcp__b__search", "mcp__a__only_a"}, []string{"nope", "mcp__a__nope"}},
		// a name of a server not searched is missing
		{[]string{"search", "only_a", "mcp__a__search"}, Options{Servers: []string{"b"}}, []string{"mcp__b__search"}, []string{"only_a", "mcp__a__search"}},
		{[]string{"nothing"}, Options{}, []string{}, []string{"nothing"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.names, ","), func(t *testing.T) {
			found, missing := ix.Select(tt.names, tt.opt)
			if diff := cmp.Diff(tt.want, names(found)); diff != "" {
				t.Errorf("found (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantM, missing); diff != "" {
				t.Errorf("missing (-want +got):\n%s", diff)
			}
		})
	}
	for q, want := range map[string][]string{
		"select:a,b":            {"a", "b"},
		" select: b , a,,b ":    {"b", "a"},
		"select:":               nil,
		"find select:something": nil,
	} {
		got, ok := SelectNames(q)
		if wantOK := strings.Contains(q, "select:") && !strings.HasPrefix(q, "find"); ok != wantOK || !slices.Equal(got, want) {
			t.Errorf("SelectNames(%q) = %q, %v", q, got, ok)
		}
	}
}

// TestSearchAnnotationsTitle: a tool without a title of its own is ranked
// and matched by annotations.title, as MCP's display-name precedence has
// it; a title of its own wins, and an annotations title that is not a
// string is no title.
func TestSearchAnnotationsTitle(t *testing.T) {
	ix := New(DefaultRanking()).Update(catalogOf(t, map[string][]string{"s": {
		`{"name":"t1","description":"Does a thing.","inputSchema":{"type":"object"},"annotations":{"title":"Frobnicate widgets","readOnlyHint":true}}`,
		`{"name":"t2","title":"Polish gadgets","description":"Does another thing.","inputSchema":{"type":"object"},"annotations":{"title":"Frobnicate gadgets"}}`,
		`{"name":"t3","description":"Third widgets thing.","inputSchema":{"type":"object"},"annotations":{"title":42}}`,
	}}, []string{"s"}))
	tests := []struct {
		query string
		want  []string
	}{
		{"frobnicate", []string{"mcp__s__t1"}},
		{"/^frobnicate/", []string{"mcp__s__t1"}},
		{"polish", []string{"mcp__s__t2"}},
		{"gadgets", []string{"mcp__s__t2"}},
		// the title is a name field: t1 by its title before t3 by its
		// description
		{"widgets", []string{"mcp__s__t1", "mcp__s__t3"}},
		{"/^42$/", []string{}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, names(mustSearch(t, ix, tt.query, Options{}))); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.query, diff)
		}
	}
}

func TestUpdateReusesUnchangedServers(t *testing.T) {
	servers := map[string][]string{}
	for k, v := range fixedCatalog {
		servers[k] = append([]string(nil), v...)
	}
	v1 := New(DefaultRanking()).Update(catalogOf(t, servers, fixedOrder))
	again := v1.Update(catalogOf(t, servers, fixedOrder))
	for i := range v1.segs {
		if again.segs[i] != v1.segs[i] {
			t.Errorf("server %s re-analysed though unchanged", v1.segs[i].server)
		}
	}

	// The fs server changes one tool: only its analysis is redone.
	servers["fs"][0] = `{"name":"read_file","description":"Print a spreadsheet cell.","inputSchema":{"type":"object"}}`
	v2 := v1.Update(catalogOf(t, servers, fixedOrder))
	for i, s := range v2.segs {
		if reused := s == v1.segs[i]; reused != (s.server != "fs") {
			t.Errorf("server %s: reused %v", s.server, reused)
		}
	}
	if got := names(mustSearch(t, v2, "spreadsheet", Options{})); !cmp.Equal(got, []string{"mcp__fs__read_file"}) {
		t.Errorf("new index: %v", got)
	}
	// The old index is a snapshot: it still answers from the old catalog.
	if got := names(mustSearch(t, v1, "spreadsheet", Options{})); len(got) != 0 {
		t.Errorf("old index sees the new catalog: %v", got)
	}

	// A server removed disappears; an empty catalog is an empty index.
	v3 := v2.Update(catalogOf(t, servers, []string{"browser", "github"}))
	if got := names(mustSearch(t, v3, "/^mcp__fs__/", Options{})); len(got) != 0 {
		t.Errorf("removed server still found: %v", got)
	}
	if v3.Len() != len(servers["browser"])+len(servers["github"]) {
		t.Errorf("Len %d", v3.Len())
	}
	if got := mustSearch(t, v3.Update(nil), "file", Options{}); len(got) != 0 {
		t.Errorf("empty index found %v", names(got))
	}
}

func TestUpdateFollowsRenames(t *testing.T) {
	// A qualified name can change without the raw tool changing (another
	// server's tool now collides with it): the index must follow.
	tools := catalogOf(t, fixedCatalog, fixedOrder)
	v1 := New(DefaultRanking()).Update(tools)
	renamed := append([]catalog.Tool(nil), tools...)
	renamed[0].Qualified = "mcp__browser__browser_take_screenshot_0123456789ab"
	v2 := v1.Update(renamed)
	got := names(mustSearch(t, v2, "select:mcp__browser__browser_take_screenshot_0123456789ab", Options{}))
	if !cmp.Equal(got, []string{"mcp__browser__browser_take_screenshot_0123456789ab"}) {
		t.Errorf("renamed tool: %v", got)
	}
}

func TestTerms(t *testing.T) {
	tests := []struct {
		text string
		stem bool
		want []string
	}{
		{"browser_take_screenshot", false, []string{"browser", "take", "screenshot"}},
		{"getHTTPResponse2", false, []string{"get", "http", "response", "2"}},
		{"API-retrieve-a-page", false, []string{"api", "retrieve", "page"}},
		{"list_directory_with_sizes", true, []string{"list", "directory", "size"}},
		{"base64 v2.1", false, []string{"base", "64", "v", "2", "1"}},
		{"Crée une page in Notion!", false, []string{"crée", "une", "page", "notion"}},
		{"Creating created creates", true, []string{"creat", "creat", "creat"}},
		{"", false, nil},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, terms(nil, tt.text, tt.stem)); diff != "" {
			t.Errorf("terms(%q, %v) (-want +got):\n%s", tt.text, tt.stem, diff)
		}
	}
}

func TestStemWord(t *testing.T) {
	for in, want := range map[string]string{
		"files": "file", "file": "file", "queries": "query", "query": "query",
		"issues": "issu", "issue": "issu", "running": "run", "create": "creat", "updated": "updat",
		"status": "status", "class": "class", "address": "address", "analysis": "analysis",
		"directories": "directory", "addresses": "address", "pages": "page", "tabs": "tabs",
		"passed": "pass", "listing": "list",
	} {
		if got := stemWord(in); got != want {
			t.Errorf("stemWord(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestFirstSentence(t *testing.T) {
	long := strings.Repeat("word ", 100)
	tests := []struct{ in, want string }{
		{"Navigate to a URL", "Navigate to a URL"},
		{"Take a screenshot. Use snapshot for actions.", "Take a screenshot."},
		{"Version 1.2 of the tool.", "Version 1.2 of the tool."},
		{"  Notion | Retrieve a user\nError Responses:\n400: Bad request", "Notion | Retrieve a user"},
		{" 🎯 Purpose:\n 1. Retrieves a paginated list of objects.\n 2. More.", "🎯 Purpose: 1. Retrieves a paginated list of objects."},
		{"", ""},
		{long, strings.TrimSpace(long[:240]) + "…"},
	}
	for _, tt := range tests {
		if got := firstSentence(tt.in); got != tt.want {
			t.Errorf("firstSentence(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestSchemaParams(t *testing.T) {
	got := schemaParams(json.RawMessage(`{"type":"object","properties":{"q":{"type":"string","description":"the query"},"n":{"title":"Count"},"x":{}}}`))
	want := map[string]string{"q": "the query", "n": "Count", "x": ""}
	m := map[string]string{}
	for _, p := range got {
		m[p.name] = p.desc
	}
	if diff := cmp.Diff(want, m); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, bad := range []string{``, `[]`, `{"properties":[1]}`, `{"properties":{"a":{"description":5}}}`} {
		if ps := schemaParams(json.RawMessage(bad)); len(ps) != 0 {
			t.Errorf("schemaParams(%s) = %v", bad, ps)
		}
	}
}

// TestSearchConcurrent runs searches while the catalog changes: an Index
// is immutable, so the race detector must find nothing.
func TestSearchConcurrent(t *testing.T) {
	tools := catalogOf(t, fixedCatalog, fixedOrder)
	ix := New(DefaultRanking()).Update(tools)
	done := make(chan struct{})
	go func() {
		defer close(done)
		cur := ix
		for i := range 50 {
			changed := append([]catalog.Tool(nil), tools...)
			changed[i%len(changed)].Raw = json.RawMessage(fmt.Sprintf(`{"name":"x%d"}`, i))
			cur = cur.Update(changed)
		}
	}()
	for range 50 {
		mustSearch(t, ix, "file", Options{})
	}
	<-done
}

// TestUpdateMatchesRebuild changes a server's tools in every way a refresh
// can (a tool changed, added, removed, the order changed, all replaced)
// and checks that the updated index ranks exactly as one built from
// nothing.
func TestUpdateMatchesRebuild(t *testing.T) {
	base := fixedCatalog["fs"]
	changes := map[string][]string{
		"one changed":  {base[0], strings.Replace(base[1], "overwrite", "replace", 1), base[2], base[3]},
		"one added":    {base[0], base[1], `{"name":"delete_file","description":"Delete a file for good.","inputSchema":{"type":"object","properties":{"path":{"type":"string"}}}}`, base[2], base[3]},
		"one removed":  {base[0], base[2], base[3]},
		"reordered":    {base[3], base[2], base[1], base[0]},
		"all replaced": {`{"name":"tail","description":"Show the end of a log file.","inputSchema":{"type":"object"}}`},
	}
	// Only what changed is analysed again.
	analysed := map[string]int{"one changed": 1, "one added": 1, "one removed": 0, "reordered": 0, "all replaced": 1}
	queries := []string{"file", "delete a file", "rename", "read the log", "replace a file", "/file/", "select:mcp__fs__read_file,mcp__fs__tail"}
	for name, fs := range changes {
		t.Run(name, func(t *testing.T) {
			servers := map[string][]string{"browser": fixedCatalog["browser"], "fs": fixedCatalog["fs"], "github": fixedCatalog["github"]}
			v1 := New(DefaultRanking()).Update(catalogOf(t, servers, fixedOrder))
			servers["fs"] = fs
			tools := catalogOf(t, servers, fixedOrder)
			updated := v1.Update(tools)
			if got := updated.Analysed(); got != analysed[name] {
				t.Errorf("update analysed %d tools, want %d", got, analysed[name])
			}
			rebuilt := New(DefaultRanking()).Update(tools)
			for _, q := range queries {
				if diff := cmp.Diff(mustSearch(t, rebuilt, q, Options{Limit: 20}), mustSearch(t, updated, q, Options{Limit: 20})); diff != "" {
					t.Errorf("%q: updated index differs from a rebuilt one (-rebuilt +updated):\n%s", q, diff)
				}
			}
		})
	}
}

func TestRequiredLiteral(t *testing.T) {
	for pattern, want := range map[string]string{
		"pull request":       "pull request",
		"Pull.?Request":      "request",
		"^mcp__github__":     "mcp__github__",
		"(create|update)_is": "_is",
		"issue|bug":          "",
		"(abc)+def":          "abc",
		"(?:xyzw)?ab":        "",
		"a{2,}bcd":           "bcd",
		"é+tude":             "tude",
		"étude":              "", // non-ASCII: left to regexp
		"[ab]c":              "",
		"(":                  "",
	} {
		if got := requiredLiteral(pattern); got != want {
			t.Errorf("requiredLiteral(%q) = %q, want %q", pattern, got, want)
		}
	}
}

func TestContainsFold(t *testing.T) {
	tests := []struct {
		s, lit string
		want   bool
	}{
		{"Create a Pull Request now", "pull request", true},
		{"pull reques", "pull request", false},
		{"XYZ", "xyz", true},
		{"xy", "xyz", false},
		{"zzzz zzza", "zza", true},
		{"mcp__GitHub__x", "mcp__github__", true},
		{"", "abc", false},
	}
	for _, tt := range tests {
		if got := containsFold(tt.s, tt.lit); got != tt.want {
			t.Errorf("containsFold(%q, %q) = %v", tt.s, tt.lit, got)
		}
	}
}

// TestSearchRegexPrefilter checks that the literal prefilter never hides a
// match: case differences, and a description whose match needs Unicode
// case folding (the Kelvin sign matches k).
func TestSearchRegexPrefilter(t *testing.T) {
	servers := map[string][]string{"s": {
		`{"name":"a","description":"Opens a PULL REQUEST.","inputSchema":{"type":"object"}}`,
		`{"name":"b","description":"Heat in \u212Aelvin units — \u017Fix.","inputSchema":{"type":"object"}}`,
		`{"name":"d","description":"Size — Kelvin.","inputSchema":{"type":"object"}}`,
		`{"name":"c","description":"Nothing here.","inputSchema":{"type":"object"}}`,
	}}
	ix := New(DefaultRanking()).Update(catalogOf(t, servers, []string{"s"}))
	for q, want := range map[string][]string{
		"/pull request/": {"mcp__s__a"},
		"/kelvin/":       {"mcp__s__b", "mcp__s__d"},
		"/six/":          {"mcp__s__b"},
		"/here/":         {"mcp__s__c"},
	} {
		if diff := cmp.Diff(want, names(mustSearch(t, ix, q, Options{}))); diff != "" {
			t.Errorf("%s (-want +got):\n%s", q, diff)
		}
	}
}
