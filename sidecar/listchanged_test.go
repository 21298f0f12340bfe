package sidecar_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/hostclient"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

var (
	listChangedOn  = map[string]any{"features": map[string]bool{"mcp_tool_list_changed": true}}
	listChangedOff = map[string]any{"features": map[string]bool{"mcp_tool_list_changed": false}}
)

func toolNames(list protocol.ToolsListResult) []string {
	var names []string
	for _, t := range list.Tools {
		names = append(names, t.Tool)
	}
	slices.Sort(names)
	return names
}

// listings counts the tools/list requests (pages included) a fixture
// received, and how many of them began a listing (no cursor).
func listings(path string) (requests, firstPages int) {
	for _, l := range fixture.ReadLines(path) {
		requests++
		if strings.HasSuffix(l, " -") {
			firstPages++
		}
	}
	return requests, firstPages
}

func waitToolsChanged(h *harness, session, server, reason string) {
	h.t.Helper()
	h.waitFor("mcp/toolsChanged "+server+" "+reason, func(n hostclient.Notification) bool {
		var p protocol.ToolsChangedParams
		return n.Method == protocol.NotifyToolsChanged && json.Unmarshal(n.Params, &p) == nil &&
			p.SessionID == session && p.Server == server && p.Reason == reason
	})
}

// TestListChangedToolCallableInSameTurn: a tool the server adds at run time
// is listed and callable as soon as its notification arrived, by default
// (the host asks for nothing) as when the host turns the feature on.
func TestListChangedToolCallableInSameTurn(t *testing.T) {
	for _, tc := range []struct {
		name  string
		extra map[string]any
	}{{"by default", nil}, {"asked for", listChangedOn}} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", fixture.Spec{Tools: []fixture.ToolSpec{tool("add", "add_tool")}})}, tc.extra)
			open := h.open(map[string]any{"startup": "eager"})
			if _, err := h.callTool(map[string]any{"sessionId": open.SessionID, "name": "mcp__s__add", "arguments": map[string]any{"name": "fresh"}}); err != nil {
				t.Fatal(err)
			}
			waitToolsChanged(h, open.SessionID, "s", protocol.ReasonListChanged)
			if got := toolNames(h.toolsList(open.SessionID)); !slices.Equal(got, []string{"add", "fresh"}) {
				t.Fatalf("tools = %v, want add and fresh", got)
			}
			res, err := h.callTool(map[string]any{"sessionId": open.SessionID, "name": "mcp__s__fresh", "arguments": map[string]any{"hello": 1}})
			if err != nil {
				t.Fatalf("calling the new tool: %v", err)
			}
			if !strings.Contains(string(res), `"hello":1`) {
				t.Errorf("result %s", res)
			}
		})
	}
}

// TestListChangedStaleRefreshedBeforeDiscovery: even before any background
// refresh, a tools/list after the notification sees the new catalog: the
// refresh happens before discovery.
func TestListChangedRefreshedBeforeDiscoveryAndBinding(t *testing.T) {
	count := tempFile(t, "count")
	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", fixture.Spec{
		CountFile: count, Tools: []fixture.ToolSpec{tool("add", "add_tool")},
	})}, listChangedOn)
	open := h.open(map[string]any{"startup": "eager"})
	h.waitComplete(open.SessionID, 0)
	if _, err := h.callTool(map[string]any{"sessionId": open.SessionID, "name": "mcp__s__add", "arguments": map[string]any{"name": "late"}}); err != nil {
		t.Fatal(err)
	}
	// Calling the new tool by its raw name binds it: the stale catalog is
	// refreshed first. The notification is debounced by the SDK, so wait
	// until the sidecar saw it (toolsChanged), then bind.
	waitToolsChanged(h, open.SessionID, "s", protocol.ReasonListChanged)
	if _, err := h.callTool(map[string]any{"sessionId": open.SessionID, "server": "s", "tool": "late"}); err != nil {
		t.Fatalf("binding the new tool: %v", err)
	}
	if _, first := listings(count); first != 2 {
		t.Errorf("%d listings, want 2 (startup, one refresh)", first)
	}
}

// TestListChangedBurstCoalesces: 1,000 notifications right after
// initialize cost a handful of listings, and the catalog ends right.
func TestListChangedBurstCoalesces(t *testing.T) {
	count := tempFile(t, "count")
	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", fixture.Spec{
		CountFile: count, ToolListChangedOnInit: 1000, Tools: []fixture.ToolSpec{tool("a", "echo"), tool("b", "echo")},
	})}, listChangedOn)
	open := h.open(map[string]any{"startup": "eager"})
	h.waitComplete(open.SessionID, 0)
	if got := toolNames(h.toolsList(open.SessionID)); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("tools = %v", got)
	}
	// Each refresh lists once for every notification that arrived before it
	// began; a listing overtaken is retried at most 5 times. One startup
	// listing plus a few refreshes while the burst drains: at most 10, far
	// from 1,000.
	_, first := listings(count)
	if first < 1 || first > 10 {
		t.Errorf("%d listings for a burst of 1,000 notifications, want 1..10", first)
	}
	t.Logf("1,000 notifications: %d listings", first)
}

// TestListChangedBetweenPages: a notification between page 1 and page 2
// of a refresh discards the listing; the catalog is never assembled from
// pages of two versions.
func TestListChangedBetweenPages(t *testing.T) {
	count := tempFile(t, "count")
	h := newHarness(t)
	// Startup lists pages 1-3; add_tool's notification starts a refresh
	// listing 4 tools in pages 4-7; just before answering page 5 the
	// server notifies again, so that listing is overtaken and retried.
	h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", fixture.Spec{
		CountFile: count, PageSize: 1, NotifyToolsChangedAtList: []int{5},
		Tools: []fixture.ToolSpec{tool("add", "add_tool"), tool("b", "echo"), tool("c", "echo")},
	})}, listChangedOn)
	open := h.open(map[string]any{"startup": "eager"})
	h.waitComplete(open.SessionID, 0)
	if _, err := h.callTool(map[string]any{"sessionId": open.SessionID, "name": "mcp__s__add", "arguments": map[string]any{"name": "d"}}); err != nil {
		t.Fatal(err)
	}
	waitToolsChanged(h, open.SessionID, "s", protocol.ReasonListChanged)
	// The catalog was swapped (and toolsChanged sent) only after the retry:
	// the overtaken listing was never published.
	requests, first := listings(count)
	if first != 3 || requests != 11 {
		t.Errorf("%d requests in %d listings before the swap, want 11 in 3 (startup, overtaken refresh, retry): %q", requests, first, fixture.ReadLines(count))
	}
	list := h.toolsList(open.SessionID)
	if got := toolNames(list); !slices.Equal(got, []string{"add", "b", "c", "d"}) || list.Servers[0].Stale {
		t.Fatalf("tools = %v (stale %v)", got, list.Servers[0].Stale)
	}
	if requests2, _ := listings(count); requests2 != requests {
		t.Errorf("tools/list listed again (%d requests): the retried catalog should have been current", requests2)
	}
}

// TestListChangedFailedRefreshKeepsCatalog: a failed refresh keeps the
// previous catalog (served marked stale during the cooldown), reports the
// failure, and succeeds after the cooldown.
func TestListChangedFailedRefreshKeepsCatalog(t *testing.T) {
	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", fixture.Spec{
		FailListAt: []int{2}, Tools: []fixture.ToolSpec{tool("add", "add_tool")},
	})}, map[string]any{"features": map[string]bool{"mcp_tool_list_changed": true}, "limits": map[string]any{"refreshCooldownMs": 300}})
	open := h.open(map[string]any{"startup": "eager"})
	h.waitComplete(open.SessionID, 0)
	if _, err := h.callTool(map[string]any{"sessionId": open.SessionID, "name": "mcp__s__add", "arguments": map[string]any{"name": "new"}}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("the failed refresh reported", func(n hostclient.Notification) bool {
		return n.Method == protocol.NotifyLog && strings.Contains(string(n.Params), "previous catalog kept")
	})
	list := h.toolsList(open.SessionID)
	if got := toolNames(list); !slices.Equal(got, []string{"add"}) || !list.Servers[0].Stale {
		t.Fatalf("during the cooldown: tools %v stale %v, want the previous catalog marked stale", got, list.Servers[0].Stale)
	}
	var st protocol.ServersStatusResult
	if err := h.call(protocol.MethodServersStatus, map[string]any{"sessionId": open.SessionID}, &st); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(st.Servers[0].LastError, "previous catalog kept") {
		t.Errorf("lastError %q should report the failed refresh", st.Servers[0].LastError)
	}
	// After the cooldown the next discovery refreshes.
	for {
		list = h.toolsList(open.SessionID)
		if !list.Servers[0].Stale {
			break
		}
		select {
		case <-h.ctx.Done():
			t.Fatal("catalog stayed stale")
		default:
		}
	}
	if got := toolNames(list); !slices.Equal(got, []string{"add", "new"}) {
		t.Errorf("after the cooldown: tools %v", got)
	}
}

// TestListChangedAdmittedCallFinishes: a call admitted before a refresh
// removes its tool completes against what it was bound to.
func TestListChangedAdmittedCallFinishes(t *testing.T) {
	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", fixture.Spec{
		Tools: []fixture.ToolSpec{tool("slow", "sleep"), tool("remove", "remove_tool")},
	})}, listChangedOn)
	open := h.open(map[string]any{"startup": "eager"})
	_, w, err := h.client.Dispatch(h.ctx, protocol.MethodToolsCall, map[string]any{
		"sessionId": open.SessionID, "name": "mcp__s__slow", "arguments": map[string]any{"ms": 500},
		"meta": map[string]any{"progressToken": "slow-1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	h.waitFor("slow call running", func(n hostclient.Notification) bool {
		return n.Method == protocol.NotifyProgress && strings.Contains(string(n.Params), "slow-1")
	})
	if _, err := h.callTool(map[string]any{"sessionId": open.SessionID, "name": "mcp__s__remove", "arguments": map[string]any{"name": "slow"}}); err != nil {
		t.Fatal(err)
	}
	waitToolsChanged(h, open.SessionID, "s", protocol.ReasonListChanged)
	if got := toolNames(h.toolsList(open.SessionID)); !slices.Equal(got, []string{"remove"}) {
		t.Fatalf("tools after removal = %v", got)
	}
	var res json.RawMessage
	if err := w.Wait(h.ctx, &res); err != nil {
		t.Fatalf("the admitted call should finish: %v", err)
	}
	_, err = h.callTool(map[string]any{"sessionId": open.SessionID, "name": "mcp__s__slow", "arguments": map[string]any{"ms": 1}})
	h.wantCode(err, protocol.CodeUnknownTool)
}

// TestListChangedFeatureOff: with the feature turned off, notifications
// are logged; the catalog changes only on explicit refresh.
func TestListChangedFeatureOff(t *testing.T) {
	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", fixture.Spec{Tools: []fixture.ToolSpec{tool("add", "add_tool")}})}, listChangedOff)
	open := h.open(map[string]any{"startup": "eager"})
	if _, err := h.callTool(map[string]any{"sessionId": open.SessionID, "name": "mcp__s__add", "arguments": map[string]any{"name": "x"}}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("notification logged", func(n hostclient.Notification) bool {
		return n.Method == protocol.NotifyLog && strings.Contains(string(n.Params), "tools/list_changed")
	})
	if got := toolNames(h.toolsList(open.SessionID)); !slices.Equal(got, []string{"add"}) {
		t.Fatalf("feature off: tools %v changed without a refresh", got)
	}
	var refreshed protocol.ToolsListResult
	if err := h.call(protocol.MethodServersRefresh, map[string]any{"sessionId": open.SessionID, "server": "s"}, &refreshed); err != nil {
		t.Fatal(err)
	}
	if got := toolNames(refreshed); !slices.Equal(got, []string{"add", "x"}) {
		t.Errorf("servers/refresh returned %v", got)
	}
	waitToolsChanged(h, open.SessionID, "s", protocol.ReasonRefresh)
}

// TestListChangedRefreshUpdatesDiskCache: a refresh replaces the scope's
// disk entry, so no later startup publishes tools from before it.
func TestListChangedRefreshUpdatesDiskCache(t *testing.T) {
	cacheDir := t.TempDir()
	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", fixture.Spec{Tools: []fixture.ToolSpec{tool("add", "add_tool")}})},
		map[string]any{"cacheDir": cacheDir, "features": map[string]bool{"mcp_tool_list_changed": true}})
	open := h.open(map[string]any{"startup": "eager"})
	if _, err := h.callTool(map[string]any{"sessionId": open.SessionID, "name": "mcp__s__add", "arguments": map[string]any{"name": "cached_later"}}); err != nil {
		t.Fatal(err)
	}
	waitToolsChanged(h, open.SessionID, "s", protocol.ReasonListChanged)
	// The refresh writes the cache in the background; closing the session
	// waits for that write.
	if err := h.call(protocol.MethodSessionClose, map[string]any{"sessionId": open.SessionID}, nil); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(cacheDir, "*.json"))
	if len(files) != 1 {
		t.Fatalf("cache files %v, want one", files)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "cached_later") {
		t.Errorf("disk cache still holds the catalog from before the notification")
	}
}

// TestListChangedInvalidatesDiskCacheEvenIfRefreshFails: a notification makes
// the scope's disk entry outdated; if the refresh then fails, the entry must
// not survive to be served, as "cached", to a new lazy session.
func TestListChangedInvalidatesDiskCacheEvenIfRefreshFails(t *testing.T) {
	cacheDir := t.TempDir()
	// The second tools/list of the process (the refresh) fails.
	cfg := fixture.Config("s", fixture.Spec{FailListAt: []int{2}, Tools: []fixture.ToolSpec{
		tool("keep", "echo"), tool("gone", "echo"), tool("remove", "remove_tool"),
	}})
	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{"s": cfg}, map[string]any{
		"cacheDir": cacheDir,
		"features": map[string]bool{"mcp_tool_list_changed": true, "mcp_lazy_stdio_startup": true},
	})
	a := h.open(map[string]any{"sessionId": "A", "startup": "eager"}).SessionID
	h.waitComplete(a, 0)
	if files := cacheFiles(t, cacheDir); len(files) != 1 {
		t.Fatalf("the startup listing was not cached: %q", files)
	}
	if _, err := h.callTool(map[string]any{"sessionId": a, "name": "mcp__s__remove", "arguments": map[string]any{"name": "gone"}}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("the failed refresh reported", func(n hostclient.Notification) bool {
		return n.Method == protocol.NotifyLog && strings.Contains(string(n.Params), "previous catalog kept")
	})

	open := h.open(map[string]any{"sessionId": "B", "startup": "lazy"})
	if open.Servers[0].State == protocol.StateDormant {
		t.Errorf("session B: server s is dormant on a cached catalog that a notification outdated")
	}
	for _, s := range h.toolsList("B").Servers {
		if s.Catalog == protocol.CatalogCached {
			t.Errorf("session B lists %s from the outdated cache: %+v", s.Name, s)
		}
	}
}
