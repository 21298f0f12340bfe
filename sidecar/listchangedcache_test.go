package sidecar_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/hostclient"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
	"github.com/mcp-sidecar/mcp-sidecar/sidecar"
)

// Tests of the disk cache around tools/list_changed at startup: a server
// that announces a change right after initialized (server-everything does,
// though its tools do not change) must still leave a cached catalog for
// lazy startup, in both states of mcp_tool_list_changed; and a catalog
// such a notification outdated is never served as cached.

// listChangedCacheFeatures are initialize's features: lazy startup, and
// mcp_tool_list_changed as told.
func listChangedCacheFeatures(cacheDir string, listChanged bool) map[string]any {
	return map[string]any{"cacheDir": cacheDir, "features": map[string]bool{
		"mcp_lazy_stdio_startup": true, "mcp_tool_list_changed": listChanged,
	}}
}

// TestLazyStartupAfterListChangedAtStartup: an eager session of a server
// that sends tools/list_changed during its startup leaves its catalog on
// disk, and the next lazy session serves it without a process.
func TestLazyStartupAfterListChangedAtStartup(t *testing.T) {
	tools := []fixture.ToolSpec{tool("a", "echo"), tool("b", "echo")}
	servers := []struct {
		name string
		spec fixture.Spec
	}{
		// The notification reaches the sidecar before the answer to its
		// startup listing, deterministically: the listing is overtaken.
		{"overtakes startup listing", fixture.Spec{NotifyToolsChangedAtList: []int{1}, Tools: tools}},
		// As server-everything: a few notifications on initialized, before
		// or while the startup listing runs.
		{"on initialized", fixture.Spec{ToolListChangedOnInit: 3, Tools: tools}},
	}
	for _, srv := range servers {
		for _, listChanged := range []bool{false, true} {
			t.Run(srv.name+"/"+map[bool]string{false: "feature off", true: "feature on"}[listChanged], func(t *testing.T) {
				cacheDir := t.TempDir()
				h := newHarness(t)
				h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", srv.spec)}, listChangedCacheFeatures(cacheDir, listChanged))
				a := h.open(map[string]any{"sessionId": "A", "startup": "eager"}).SessionID
				h.waitComplete(a, 0)
				// Closing waits for any disk write in progress.
				if err := h.call(protocol.MethodSessionClose, map[string]any{"sessionId": a}, nil); err != nil {
					t.Fatal(err)
				}

				open := h.open(map[string]any{"sessionId": "B", "startup": "lazy"})
				if got := open.Servers[0].State; got != protocol.StateDormant {
					t.Errorf("lazy session: server s is %s, want dormant on the cached catalog (cache folder: %q)", got, cacheFiles(t, cacheDir))
				}
				names, entry := serverTools(h.toolsList("B"), "s")
				if diff := cmp.Diff([]string{"a", "b"}, names); diff != "" || entry.Catalog != protocol.CatalogCached {
					t.Errorf("lazy session lists %v from a %q catalog, want a and b cached (-want +got):\n%s", names, entry.Catalog, diff)
				}
			})
		}
	}
}

// TestListChangedAtStartupWithFailingRelistNeverServedCached: one sidecar with
// mcp_tool_list_changed off ignores the notification and caches the startup
// listing; a second one, with it on and the same cache folder, learns from the
// notification that the entry is outdated, and its listing again fails. The
// entry must go, and no lazy session may serve it.
func TestListChangedAtStartupWithFailingRelistNeverServedCached(t *testing.T) {
	cacheDir := t.TempDir()
	cfg := fixture.Config("s", fixture.Spec{NotifyToolsChangedAtList: []int{1}, FailListAt: []int{2},
		Tools: []fixture.ToolSpec{tool("a", "echo"), tool("b", "echo")}})
	servers := map[string]*config.ServerConfig{"s": cfg}

	off := newHarness(t)
	off.initialize(servers, listChangedCacheFeatures(cacheDir, false))
	a := off.open(map[string]any{"sessionId": "A", "startup": "eager"}).SessionID
	off.waitComplete(a, 0)
	if err := off.call(protocol.MethodSessionClose, map[string]any{"sessionId": a}, nil); err != nil {
		t.Fatal(err)
	}
	if got := off.open(map[string]any{"sessionId": "B", "startup": "lazy"}).Servers[0].State; got != protocol.StateDormant {
		t.Fatalf("feature off: lazy session: server s is %s, want dormant (the notification is ignored, the listing cached)", got)
	}

	on := newHarness(t)
	on.initialize(servers, listChangedCacheFeatures(cacheDir, true))
	c := on.open(map[string]any{"sessionId": "C", "startup": "eager"}).SessionID
	on.waitComplete(c, 0)
	on.waitFor("the failed listing reported", func(n hostclient.Notification) bool {
		return n.Method == protocol.NotifyLog && strings.Contains(string(n.Params), "previous catalog kept")
	})
	// The startup listing is served, marked stale.
	names, entry := serverTools(on.toolsList(c), "s")
	if diff := cmp.Diff([]string{"a", "b"}, names); diff != "" || !entry.Stale || entry.Catalog != protocol.CatalogLive {
		t.Errorf("session C lists %v (catalog %q, stale %v), want a and b, live and stale (-want +got):\n%s", names, entry.Catalog, entry.Stale, diff)
	}
	if err := on.call(protocol.MethodSessionClose, map[string]any{"sessionId": c}, nil); err != nil {
		t.Fatal(err)
	}
	if files := cacheFiles(t, cacheDir); len(files) != 0 {
		t.Errorf("cache folder holds %q after a notification outdated its entry and no listing replaced it", files)
	}
	open := on.open(map[string]any{"sessionId": "D", "startup": "lazy"})
	if open.Servers[0].State == protocol.StateDormant {
		t.Errorf("session D: server s is dormant on a cached catalog that a notification outdated")
	}
	on.waitComplete("D", 0)
	if _, entry := serverTools(on.toolsList("D"), "s"); entry.Catalog == protocol.CatalogCached {
		t.Errorf("session D lists s from the outdated cache: %+v", entry)
	}
}

// TestStaleAtReadyIsRefreshed: when every startup listing is overtaken (a
// server that keeps notifying), the server becomes ready with its last
// listing, stale and not cached; a background refresh follows on its own,
// as it would for a notification after readiness, and caches its listing.
func TestStaleAtReadyIsRefreshed(t *testing.T) {
	cacheDir := t.TempDir()
	count := tempFile(t, "count")
	started := newSignals()
	h := newHookedHarness(t, sidecar.Hooks{BackgroundRefresh: func(session, server string) { started.fire() }})
	// Listings 1-6: the startup's and its five tries again, all overtaken.
	spec := fixture.Spec{CountFile: count, NotifyToolsChangedAtList: []int{1, 2, 3, 4, 5, 6},
		Tools: []fixture.ToolSpec{tool("a", "echo"), tool("b", "echo")}}
	h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", spec)}, listChangedCacheFeatures(cacheDir, true))
	a := h.open(map[string]any{"sessionId": "A", "startup": "eager"}).SessionID
	h.waitComplete(a, 0)
	started.wait(t, 1, "a background refresh of the catalog that was stale at readiness")

	names, entry := serverTools(h.toolsList(a), "s")
	if diff := cmp.Diff([]string{"a", "b"}, names); diff != "" || entry.Stale {
		t.Errorf("tools %v (stale %v), want a and b, current (-want +got):\n%s", names, entry.Stale, diff)
	}
	if _, first := listings(count); first != 7 {
		t.Errorf("%d listings, want 7 (six overtaken at startup, one refresh): %q", first, fixture.ReadLines(count))
	}
	if err := h.call(protocol.MethodSessionClose, map[string]any{"sessionId": a}, nil); err != nil {
		t.Fatal(err)
	}
	if got := h.open(map[string]any{"sessionId": "B", "startup": "lazy"}).Servers[0].State; got != protocol.StateDormant {
		t.Errorf("lazy session: server s is %s, want dormant on the refreshed catalog", got)
	}
}
