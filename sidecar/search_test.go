package sidecar_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcp-sidecar/mcp-sidecar/catalog"
	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
	"github.com/mcp-sidecar/mcp-sidecar/sidecar"
)

// Tests of tools/search, tools/get, tools/list with schemas: false and the
// token estimates of servers/status (docs/protocol.md, "tools/search").

// searchServers are two fixture servers whose tools read like real ones.
func searchServers() map[string]*config.ServerConfig {
	return map[string]*config.ServerConfig{
		"gh": fixture.Config("gh", fixture.Spec{Tools: []fixture.ToolSpec{
			rawTool(`{"name":"create_pull_request","description":"Create a new pull request in a GitHub repository. Needs a head branch.","inputSchema":{"type":"object","properties":{"head":{"type":"string","description":"The branch with your changes"}}}}`, "echo"),
			rawTool(`{"name":"create_issue","description":"Create a new issue in a GitHub repository.","inputSchema":{"type":"object","properties":{"title":{"type":"string"}}}}`, "echo"),
			rawTool(`{"name":"list_issues","description":"List issues in a GitHub repository.","inputSchema":{"type":"object"},"outputSchema":{"type":"object","properties":{"issues":{"type":"array"}}}}`, "echo"),
			tool("add", "add_tool"),
		}}),
		"fs": fixture.Config("fs", fixture.Spec{Tools: []fixture.ToolSpec{
			rawTool(`{"name":"read_file","description":"Read the complete contents of a file.","inputSchema":{"type":"object","properties":{"path":{"type":"string"}}}}`, "echo"),
			rawTool(`{"name":"list_directory","description":"List the files and directories in a path.","inputSchema":{"type":"object","properties":{"path":{"type":"string"}}}}`, "echo"),
			rawTool(`{"name":"move_file","description":"Move or rename a file.","inputSchema":{"type":"object","properties":{"source":{"type":"string"},"destination":{"type":"string"}}}}`, "echo"),
		}}),
	}
}

func (h *harness) search(params map[string]any) ([]protocol.ToolSearchResult, error) {
	var res protocol.ToolsSearchResult
	err := h.call(protocol.MethodToolsSearch, params, &res)
	return res.Results, err
}

func (h *harness) mustSearch(session, query string) []string {
	h.t.Helper()
	res, err := h.search(map[string]any{"sessionId": session, "query": query})
	if err != nil {
		h.t.Fatalf("tools/search %q: %v", query, err)
	}
	return resultNames(res)
}

func resultNames(res []protocol.ToolSearchResult) []string {
	names := []string{}
	for _, r := range res {
		names = append(names, r.Name)
	}
	return names
}

func TestToolsSearch(t *testing.T) {
	h := newHarness(t)
	h.initialize(searchServers(), nil)
	sid := h.open(map[string]any{"startup": "eager"}).SessionID
	h.waitComplete(sid, 0)

	res, err := h.search(map[string]any{"sessionId": sid, "query": "open a PR", "limit": 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].Score <= 0 {
		t.Fatalf("results %+v", res)
	}
	res[0].Score = 0
	want := protocol.ToolSearchResult{Name: "mcp__gh__create_pull_request", Server: "gh", Tool: "create_pull_request",
		Description: "Create a new pull request in a GitHub repository."}
	if diff := cmp.Diff(want, res[0]); diff != "" {
		t.Errorf("first result (-want +got):\n%s", diff)
	}

	tests := []struct {
		name   string
		params map[string]any
		want   []string
	}{
		{"free text", map[string]any{"query": "rename a file"}, []string{"mcp__fs__move_file"}},
		{"default limit is 5", map[string]any{"query": "/./"}, []string{"mcp__fs__list_directory", "mcp__fs__move_file", "mcp__fs__read_file", "mcp__gh__add", "mcp__gh__create_issue"}},
		{"servers", map[string]any{"query": "/./", "servers": []string{"gh"}, "limit": 10}, []string{"mcp__gh__add", "mcp__gh__create_issue", "mcp__gh__create_pull_request", "mcp__gh__list_issues"}},
		{"regex on names", map[string]any{"query": "/_issues?$/"}, []string{"mcp__gh__create_issue", "mcp__gh__list_issues"}},
		{"select", map[string]any{"query": "select:mcp__gh__list_issues,mcp__fs__read_file,mcp__nope__x"}, []string{"mcp__gh__list_issues", "mcp__fs__read_file"}},
		{"nothing found", map[string]any{"query": "spreadsheet"}, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.params["sessionId"] = sid
			res, err := h.search(tt.params)
			if err != nil {
				t.Fatal(err)
			}
			got := resultNames(res)
			if tt.name == "free text" {
				got = got[:1]
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}

	errTests := []struct {
		name   string
		params map[string]any
		code   int64
		msg    string
	}{
		{"no query", map[string]any{"sessionId": sid}, protocol.CodeInvalidParams, "query is required"},
		{"blank query", map[string]any{"sessionId": sid, "query": "  "}, protocol.CodeInvalidParams, "query is required"},
		{"empty select", map[string]any{"sessionId": sid, "query": "select:,"}, protocol.CodeInvalidParams, "nothing to search for"},
		{"bad regex", map[string]any{"sessionId": sid, "query": "/(/"}, protocol.CodeInvalidParams, "bad regular expression"},
		{"negative limit", map[string]any{"sessionId": sid, "query": "file", "limit": -1}, protocol.CodeInvalidParams, "limit must be at least 1"},
		// 0 would be no results: refused, not read as the default
		{"limit 0", map[string]any{"sessionId": sid, "query": "file", "limit": 0}, protocol.CodeInvalidParams, "limit must be at least 1"},
		{"limit 0 with select:", map[string]any{"sessionId": sid, "query": "select:read_file", "limit": 0}, protocol.CodeInvalidParams, "limit must be at least 1"},
		{"unknown server", map[string]any{"sessionId": sid, "query": "file", "servers": []string{"nope"}}, protocol.CodeUnknownServer, "nope"},
		{"unknown session", map[string]any{"sessionId": "nope", "query": "file"}, protocol.CodeUnknownSession, "nope"},
	}
	for _, tt := range errTests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := h.search(tt.params)
			je, _ := h.wantCode(err, tt.code)
			if !strings.Contains(je.Message, tt.msg) {
				t.Errorf("message %q lacks %q", je.Message, tt.msg)
			}
		})
	}
}

// TestToolsSearchSelect: select: takes qualified names and the servers'
// own names, and reports the names that name no tool in missing; a
// limit: null is the default.
func TestToolsSearchSelect(t *testing.T) {
	h := newHarness(t)
	h.initialize(searchServers(), nil)
	sid := h.open(map[string]any{"startup": "eager"}).SessionID
	h.waitComplete(sid, 0)
	tests := []struct {
		name   string
		params map[string]any
		want   string
	}{
		{"raw and qualified names", map[string]any{"query": "select:read_file,mcp__gh__list_issues"},
			`{"results":[{"name":"mcp__fs__read_file","server":"fs","tool":"read_file","score":1,"description":"Read the complete contents of a file."},` +
				`{"name":"mcp__gh__list_issues","server":"gh","tool":"list_issues","score":1,"description":"List issues in a GitHub repository."}]}`},
		{"names that name no tool", map[string]any{"query": "select:nope,move_file,mcp__fs__nope"},
			`{"results":[{"name":"mcp__fs__move_file","server":"fs","tool":"move_file","score":1,"description":"Move or rename a file."}],"missing":["nope","mcp__fs__nope"]}`},
		{"a server not searched", map[string]any{"query": "select:read_file", "servers": []string{"gh"}, "limit": nil},
			`{"results":[],"missing":["read_file"]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.params["sessionId"] = sid
			var res json.RawMessage
			if err := h.call(protocol.MethodToolsSearch, tt.params, &res); err != nil {
				t.Fatal(err)
			}
			if string(res) != tt.want {
				t.Errorf("result\n got %s\nwant %s", res, tt.want)
			}
		})
	}
}

// TestToolsSearchFollowsListChanged: a tool a server adds is found by the
// next search, also when the notification's background refresh has not
// run yet: the search refreshes the stale catalog first, and the index
// (built by the first search) follows.
func TestToolsSearchFollowsListChanged(t *testing.T) {
	h := newRefreshHarness(t)
	h.initialize(searchServers(), listChangedOn)
	sid := h.open(map[string]any{"startup": "eager"}).SessionID
	h.waitComplete(sid, 0)
	if got := h.mustSearch(sid, "zebra"); len(got) != 0 {
		t.Fatalf("before: %v", got)
	}
	if _, err := h.callTool(map[string]any{"sessionId": sid, "name": "mcp__gh__add", "arguments": map[string]any{"name": "zebra_crossing"}}); err != nil {
		t.Fatal(err)
	}
	// The background refresher is held back: only the search can refresh.
	h.notified.wait(t, 1, "the list_changed notification")
	if got := h.mustSearch(sid, "zebra"); !slices.Equal(got, []string{"mcp__gh__zebra_crossing"}) {
		t.Errorf("after list_changed: %v, want the new tool", got)
	}
	// The other server's tools are still found (its part of the index was
	// kept).
	if got := h.mustSearch(sid, "rename a file"); len(got) == 0 || got[0] != "mcp__fs__move_file" {
		t.Errorf("other server after the change: %v", got)
	}
}

// TestToolsSearchFollowsRefreshAndReconnect: servers/refresh puts a tool
// added at run time into the index; servers/reconnect starts a fresh
// process, which does not have it, and the index follows again.
func TestToolsSearchFollowsRefreshAndReconnect(t *testing.T) {
	h := newHarness(t)
	h.initialize(searchServers(), listChangedOff) // only refresh sees the new tool
	sid := h.open(map[string]any{"startup": "eager"}).SessionID
	h.waitComplete(sid, 0)
	h.mustSearch(sid, "zebra") // builds the index
	if _, err := h.callTool(map[string]any{"sessionId": sid, "name": "mcp__gh__add", "arguments": map[string]any{"name": "zebra_crossing"}}); err != nil {
		t.Fatal(err)
	}
	if got := h.mustSearch(sid, "zebra"); len(got) != 0 {
		t.Fatalf("before refresh (list_changed is off): %v", got)
	}
	if err := h.call(protocol.MethodServersRefresh, map[string]any{"sessionId": sid, "server": "gh"}, nil); err != nil {
		t.Fatal(err)
	}
	if got := h.mustSearch(sid, "zebra"); !slices.Equal(got, []string{"mcp__gh__zebra_crossing"}) {
		t.Errorf("after refresh: %v", got)
	}
	if err := h.call(protocol.MethodServersReconnect, map[string]any{"sessionId": sid, "server": "gh"}, nil); err != nil {
		t.Fatal(err)
	}
	if got := h.mustSearch(sid, "zebra"); len(got) != 0 {
		t.Errorf("after reconnect (a new process without the tool): %v", got)
	}
}

// TestToolsSearchSharedBetweenSessions: sessions that list the same tools
// in the same discovery scope share the search index's analysis: the first
// search of a second session analyses no tool, a refresh that changes one
// tool analyses that tool, and each session still finds its own catalog.
func TestToolsSearchSharedBetweenSessions(t *testing.T) {
	var mu sync.Mutex
	analysed := map[string][]int{}
	h := newHookedHarness(t, sidecar.Hooks{SearchIndexed: func(session string, n int) {
		mu.Lock()
		analysed[session] = append(analysed[session], n)
		mu.Unlock()
	}})
	took := func(session string) []int {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(analysed[session])
	}
	h.initialize(searchServers(), nil)
	a := h.open(map[string]any{"startup": "eager"}).SessionID
	h.waitComplete(a, 0)
	b := h.open(map[string]any{"startup": "eager"}).SessionID
	h.waitComplete(b, 0)

	first := h.mustSearch(a, "open a PR")
	if diff := cmp.Diff([]int{7}, took(a)); diff != "" {
		t.Errorf("first session's first search, tools analysed (-want +got):\n%s", diff)
	}
	if got := h.mustSearch(b, "open a PR"); !slices.Equal(got, first) {
		t.Errorf("second session found %v, the first %v", got, first)
	}
	if diff := cmp.Diff([]int{0}, took(b)); diff != "" {
		t.Errorf("second session's first search, tools analysed (-want +got):\n%s", diff)
	}

	// A tool added at run time to the first session's server (each
	// session has its own process): its refresh analyses that tool only,
	// and the second session's catalog, which lacks it, is untouched.
	if _, err := h.callTool(map[string]any{"sessionId": a, "name": "mcp__gh__add", "arguments": map[string]any{"name": "zebra_crossing"}}); err != nil {
		t.Fatal(err)
	}
	if err := h.call(protocol.MethodServersRefresh, map[string]any{"sessionId": a, "server": "gh"}, nil); err != nil {
		t.Fatal(err)
	}
	if got := h.mustSearch(a, "zebra"); !slices.Equal(got, []string{"mcp__gh__zebra_crossing"}) {
		t.Errorf("first session after its refresh: %v", got)
	}
	sum := 0
	for _, n := range took(a)[1:] {
		sum += n
	}
	if sum != 1 {
		t.Errorf("the refresh that added one tool analysed %d (updates %v)", sum, took(a)[1:])
	}
	if got := h.mustSearch(b, "zebra"); len(got) != 0 {
		t.Errorf("second session found the first session's new tool: %v", got)
	}
	if diff := cmp.Diff([]int{0}, took(b)); diff != "" {
		t.Errorf("second session's index, tools analysed (-want +got):\n%s", diff)
	}
	// A third session lists the tools the second has: it analyses nothing
	// though the first session published a newer revision since.
	c := h.open(map[string]any{"startup": "eager"}).SessionID
	h.waitComplete(c, 0)
	if got := h.mustSearch(c, "rename a file"); len(got) == 0 || got[0] != "mcp__fs__move_file" {
		t.Errorf("third session: %v", got)
	}
	if diff := cmp.Diff([]int{0}, took(c)); diff != "" {
		t.Errorf("third session's first search, tools analysed (-want +got):\n%s", diff)
	}
}

// TestToolsSearchDormantAndLazyStart: a dormant server is searched in its
// cached catalog without being started; once a call starts it, the live
// catalog (which differs) replaces the cached one in the index.
func TestToolsSearchDormantAndLazyStart(t *testing.T) {
	dir := t.TempDir()
	cacheDir := filepath.Join(dir, "cache")
	pidFile := filepath.Join(dir, "lazy.pid")
	lazy := fixture.Config("fs", fixture.Spec{PIDFile: pidFile, Tools: []fixture.ToolSpec{
		rawTool(`{"name":"read_file","description":"Read the complete contents of a file.","inputSchema":{"type":"object"}}`, "echo"),
		tool("add", "add_tool"),
	}})
	// The cache holds a tool the next process will not serve.
	primeCache(t, cacheDir, map[string]*config.ServerConfig{"fs": lazy}, func(h *harness, sid string) {
		if _, err := h.callTool(map[string]any{"sessionId": sid, "name": "mcp__fs__add", "arguments": map[string]any{"name": "zebra_crossing"}}); err != nil {
			t.Fatal(err)
		}
		if err := h.call(protocol.MethodServersRefresh, map[string]any{"sessionId": sid, "server": "fs"}, nil); err != nil {
			t.Fatal(err)
		}
	})
	os.Remove(pidFile)

	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{"fs": lazy}, map[string]any{"cacheDir": cacheDir})
	open := h.open(map[string]any{"startup": "lazy"})
	if open.Servers[0].State != protocol.StateDormant {
		t.Fatalf("session/open: %+v, want fs dormant", open.Servers)
	}
	if got := h.mustSearch(open.SessionID, "zebra"); !slices.Equal(got, []string{"mcp__fs__zebra_crossing"}) {
		t.Errorf("dormant server's cached catalog: %v", got)
	}
	wantNoFile(t, pidFile, "tools/search of a dormant server")

	if _, err := h.callTool(map[string]any{"sessionId": open.SessionID, "name": "mcp__fs__read_file"}); err != nil {
		t.Fatal(err)
	}
	if got := h.mustSearch(open.SessionID, "zebra"); len(got) != 0 {
		t.Errorf("after the lazy start: %v, want the cached-only tool gone", got)
	}
	if got := h.mustSearch(open.SessionID, "read file"); len(got) == 0 || got[0] != "mcp__fs__read_file" {
		t.Errorf("after the lazy start: %v", got)
	}
}

// TestToolsSearchRespectsFilters: enabled_tools, disabled_tools and a
// disabled server keep tools out of every kind of search and of tools/get.
func TestToolsSearchRespectsFilters(t *testing.T) {
	servers := searchServers()
	servers["gh"].DisabledTools = []string{"create_issue"}
	servers["fs"].EnabledTools = []string{"read_file"}
	off := false
	servers["off"] = fixture.Config("off", fixture.Spec{Tools: []fixture.ToolSpec{tool("read_file", "echo")}})
	servers["off"].Enabled = &off
	h := newHarness(t)
	h.initialize(servers, nil)
	sid := h.open(map[string]any{"startup": "eager"}).SessionID
	h.waitComplete(sid, 0)
	for _, q := range []string{"create a new issue", "/issue|file|director/", "select:mcp__gh__create_issue,mcp__fs__move_file,mcp__off__read_file,mcp__fs__read_file", "/^mcp__off__/", "move rename"} {
		res, err := h.search(map[string]any{"sessionId": sid, "query": q, "limit": 20})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			switch r.Name {
			case "mcp__gh__create_issue", "mcp__fs__move_file", "mcp__fs__list_directory", "mcp__off__read_file":
				t.Errorf("%q found filtered tool %s", q, r.Name)
			}
		}
	}
	var got protocol.ToolsGetResult
	if err := h.call(protocol.MethodToolsGet, map[string]any{"sessionId": sid, "names": []string{"mcp__gh__create_issue", "mcp__fs__read_file"}}, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Tools) != 1 || got.Tools[0].Name != "mcp__fs__read_file" || !slices.Equal(got.Missing, []string{"mcp__gh__create_issue"}) {
		t.Errorf("tools/get of a disabled tool: %+v", got)
	}
}

// listRaw returns tools/list's tools as the sidecar sent them.
func (h *harness) listRaw(params map[string]any) []json.RawMessage {
	h.t.Helper()
	var res struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := h.call(protocol.MethodToolsList, params, &res); err != nil {
		h.t.Fatalf("tools/list: %v", err)
	}
	return res.Tools
}

// TestToolsListWithoutSchemasAndToolsGet: schemas: false lists every tool
// without its schemas but with inputSchemaBytes and tokens; tools/get
// returns the full definitions, the same bytes tools/list gives.
func TestToolsListWithoutSchemasAndToolsGet(t *testing.T) {
	h := newHarness(t)
	h.initialize(searchServers(), nil)
	sid := h.open(map[string]any{"startup": "eager"}).SessionID
	h.waitComplete(sid, 0)
	full := h.listRaw(map[string]any{"sessionId": sid})
	summary := h.listRaw(map[string]any{"sessionId": sid, "schemas": false})
	if len(full) != 7 || len(summary) != len(full) {
		t.Fatalf("%d tools, %d summaries", len(full), len(summary))
	}
	if withTrue := h.listRaw(map[string]any{"sessionId": sid, "schemas": true}); !cmp.Equal(withTrue, full) {
		t.Error("schemas: true differs from the default")
	}
	byName := map[string]json.RawMessage{}
	for i := range full {
		var f, s map[string]json.RawMessage
		if err := json.Unmarshal(full[i], &f); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(summary[i], &s); err != nil {
			t.Fatal(err)
		}
		var name string
		_ = json.Unmarshal(f["name"], &name)
		byName[name] = full[i]
		// The summary is the full form without the schemas, plus two
		// members.
		wantS := map[string]json.RawMessage{}
		for k, v := range f {
			if k != "inputSchema" && k != "outputSchema" {
				wantS[k] = v
			}
		}
		wantS["inputSchemaBytes"] = json.RawMessage(strings.TrimSpace(string(mustJSON(t, len(f["inputSchema"])))))
		wantS["tokens"] = mustJSON(t, catalog.EstimateTokens(full[i]))
		if diff := cmp.Diff(wantS, s, cmp.Transformer("str", func(r json.RawMessage) string { return string(r) })); diff != "" {
			t.Errorf("%s: summary (-want +got):\n%s", name, diff)
		}
	}

	var got struct {
		Tools   []json.RawMessage `json:"tools"`
		Missing []string          `json:"missing"`
	}
	names := []string{"mcp__gh__list_issues", "mcp__nope__x", "mcp__fs__read_file", "mcp__gh__list_issues"}
	if err := h.call(protocol.MethodToolsGet, map[string]any{"sessionId": sid, "names": names}, &got); err != nil {
		t.Fatal(err)
	}
	want := []json.RawMessage{byName["mcp__gh__list_issues"], byName["mcp__fs__read_file"]}
	if diff := cmp.Diff(want, got.Tools, cmp.Transformer("str", func(r json.RawMessage) string { return string(r) })); diff != "" {
		t.Errorf("tools/get tools (-want +got):\n%s", diff)
	}
	if !slices.Equal(got.Missing, []string{"mcp__nope__x"}) {
		t.Errorf("missing %v", got.Missing)
	}
	if err := h.call(protocol.MethodToolsGet, map[string]any{"sessionId": sid, "names": []string{}}, &got); err != nil || len(got.Tools) != 0 || got.Missing == nil {
		t.Errorf("tools/get of no names: %+v, %v", got, err)
	}
	err := h.call(protocol.MethodToolsGet, map[string]any{"sessionId": sid}, &got)
	h.wantCode(err, protocol.CodeInvalidParams)
}

// TestToolsGetWaitsForStartup: a name a server still starting will publish
// is found, not reported missing.
func TestToolsGetWaitsForStartup(t *testing.T) {
	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{"slow": fixture.Config("slow", fixture.Spec{StartDelayMs: 200, Tools: []fixture.ToolSpec{tool("echo", "echo")}})}, nil)
	sid := h.open(map[string]any{"startup": "eager"}).SessionID
	var got protocol.ToolsGetResult
	if err := h.call(protocol.MethodToolsGet, map[string]any{"sessionId": sid, "names": []string{"mcp__slow__echo"}}, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Tools) != 1 || len(got.Missing) != 0 {
		t.Errorf("tools/get during startup: %+v", got)
	}
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestServersStatusTokens: servers/status gives each server with a
// catalog its tool count and token estimate (the sum of its tools'
// tokens in tools/list schemas: false), and the session's total; a server
// without a catalog has neither.
func TestServersStatusTokens(t *testing.T) {
	servers := searchServers()
	servers["broken"] = fixture.Config("broken", fixture.Spec{ExitAtStart: true})
	h := newHarness(t)
	h.initialize(servers, nil)
	sid := h.open(map[string]any{"startup": "eager"}).SessionID
	h.waitComplete(sid, 0)
	var list protocol.ToolsListResult
	if err := h.call(protocol.MethodToolsList, map[string]any{"sessionId": sid, "schemas": false}, &list); err != nil {
		t.Fatal(err)
	}
	want := map[string][2]int{}
	total := 0
	for _, tl := range list.Tools {
		if tl.Tokens == nil || *tl.Tokens <= 0 || tl.InputSchemaBytes == nil || tl.InputSchema != nil {
			t.Fatalf("summary of %s: %+v", tl.Name, tl)
		}
		w := want[tl.Server]
		w[0]++
		w[1] += *tl.Tokens
		want[tl.Server] = w
		total += *tl.Tokens
	}
	var st protocol.ServersStatusResult
	if err := h.call(protocol.MethodServersStatus, map[string]any{"sessionId": sid}, &st); err != nil {
		t.Fatal(err)
	}
	got := map[string][2]int{}
	for _, s := range st.Servers {
		if s.Name == "broken" {
			if s.Tools != nil || s.Tokens != nil {
				t.Errorf("failed server has tools %v tokens %v", s.Tools, s.Tokens)
			}
			continue
		}
		if s.Tools == nil || s.Tokens == nil {
			t.Fatalf("%s: no tools or tokens: %+v", s.Name, s)
		}
		got[s.Name] = [2]int{*s.Tools, *s.Tokens}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("per server [tools, tokens] (-tools/list +servers/status):\n%s", diff)
	}
	if st.Tokens != total || total == 0 {
		t.Errorf("total tokens %d, want %d", st.Tokens, total)
	}
}
