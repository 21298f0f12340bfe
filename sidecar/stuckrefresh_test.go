package sidecar_test

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/hostclient"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/testclock"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
	"github.com/mcp-sidecar/mcp-sidecar/sidecar"
)

// A server that announces a change of its tools and then never answers
// tools/list, and one that announces changes faster than it can be listed:
// the session stays usable, on the previous catalog marked stale.

// stuckHarness is a harness on a fake clock whose background refresher is
// held back (requests drive every refresh), and whose hooks report
// refreshes started (with the function that times each out) and joined.
type stuckHarness struct {
	*harness
	clock    *testclock.Clock
	notified signals
	joined   signals
	expire   chan func()
	bound    atomic.Int64 // the last refresh's bound, a time.Duration
}

func newStuckHarness(t *testing.T) *stuckHarness {
	t.Helper()
	sh := &stuckHarness{clock: newFakeClock(), notified: newSignals(), joined: newSignals(), expire: make(chan func(), 16)}
	hold := make(chan struct{})
	sh.harness = newHookedHarness(t, sidecar.Hooks{
		Now: sh.clock.Now,
		BackgroundRefresh: func(session, server string) {
			sh.notified.fire()
			<-hold
		},
		RefreshJoined: func(session, server string) { sh.joined.fire() },
		RefreshStarted: func(session, server string, bound time.Duration, expire func()) {
			sh.bound.Store(int64(bound))
			select {
			case sh.expire <- expire:
			default: // more refreshes than the test looks at: never block one
			}
		},
	})
	t.Cleanup(func() { close(hold) })
	return sh
}

// nextRefresh waits for the next refresh to begin and returns the function
// that times it out.
func (sh *stuckHarness) nextRefresh() func() {
	sh.t.Helper()
	select {
	case f := <-sh.expire:
		return f
	case <-time.After(testTimeout):
		sh.t.Fatal("timed out waiting for a catalog refresh to begin")
		return nil
	}
}

func (sh *stuckHarness) status(sid string) protocol.ServerStatus {
	sh.t.Helper()
	var st protocol.ServersStatusResult
	if err := sh.call(protocol.MethodServersStatus, map[string]any{"sessionId": sid}, &st); err != nil {
		sh.t.Fatalf("servers/status: %v", err)
	}
	return st.Servers[0]
}

// TestStuckRefresh: after notifications/tools/list_changed the server never
// answers tools/list. A tools/call with timeoutMs is answered -32014 within
// it; servers/status shows the catalog stale and the refresh in flight;
// tools/list and tools/search are answered, with the previous catalog
// marked stale, once the refresh's bound (startup_timeout_sec, here its
// hook) ends it; from then on nothing waits for the silent server's next
// refresh, and a call binds to the previous catalog.
func TestStuckRefresh(t *testing.T) {
	listings := newSignals()
	cs := newCtlServer(t, []string{"a"}, func(ctx context.Context, method string, n int) error {
		if method == "tools/list" && n >= 2 { // every refresh
			listings.fire()
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	})
	h := newStuckHarness(t)
	h.initialize(map[string]*config.ServerConfig{"s": {URL: cs.url, StartupTimeoutSec: seconds(7)}}, listChangedOn)
	sid := h.open(map[string]any{"startup": "eager"}).SessionID
	h.waitComplete(sid, 0)
	cs.addTool("b")
	h.notified.wait(t, 1, "the list_changed notification")

	// A call with timeoutMs refreshes the stale catalog first: the
	// refresh hangs, the call does not.
	_, err := h.callTool(map[string]any{"sessionId": sid, "name": "mcp__s__a", "timeoutMs": 200})
	je, data := h.wantCode(err, protocol.CodeToolTimeout)
	if !strings.Contains(je.Message, "timeoutMs") || !strings.Contains(je.Message, "refresh") || !data.Retryable || data.Server != "s" {
		t.Errorf("tools/call with timeoutMs: %q %+v; want timeoutMs and the refresh named, retryable, server s", je.Message, data)
	}
	expire := h.nextRefresh()
	if got := time.Duration(h.bound.Load()); got != 7*time.Second {
		t.Errorf("the refresh's bound: %v, want the server's startup_timeout_sec, 7s", got)
	}
	listings.wait(t, 1, "the refresh's tools/list in the server")
	if st := h.status(sid); st.State != protocol.StateReady || !st.Stale || st.RefreshingSince == "" {
		t.Errorf("servers/status during the stuck refresh: state %s stale %v refreshingSince %q; want ready, stale, the refresh's start", st.State, st.Stale, st.RefreshingSince)
	}

	// tools/list and tools/search wait for that refresh, which its bound
	// ends.
	_, list, err := h.client.Dispatch(h.ctx, protocol.MethodToolsList, map[string]any{"sessionId": sid})
	if err != nil {
		t.Fatal(err)
	}
	_, search, err := h.client.Dispatch(h.ctx, protocol.MethodToolsSearch, map[string]any{"sessionId": sid, "query": "a"})
	if err != nil {
		t.Fatal(err)
	}
	h.joined.wait(t, 2, "tools/list and tools/search waiting for the refresh")
	expire()
	var got protocol.ToolsListResult
	if err := list.Wait(h.ctx, &got); err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	if names := toolNames(got); !slices.Equal(names, []string{"a"}) || !got.Servers[0].Stale {
		t.Errorf("tools/list: %v stale %v; want the previous catalog, a, marked stale", names, got.Servers[0].Stale)
	}
	if err := search.Wait(h.ctx, nil); err != nil {
		t.Errorf("tools/search: %v", err)
	}
	st := h.status(sid)
	if !st.Stale || st.RefreshingSince != "" || !strings.Contains(st.LastError, "startup_timeout_sec") {
		t.Errorf("servers/status after the refresh timed out: stale %v refreshingSince %q lastError %q; want stale, no refresh, the timeout named", st.Stale, st.RefreshingSince, st.LastError)
	}

	// After the cooldown a request starts the next refresh but does not
	// wait for a server whose last refresh timed out.
	h.clock.Advance(time.Minute)
	if got := h.toolsList(sid); !got.Servers[0].Stale {
		t.Errorf("tools/list after the cooldown: stale %v, want the previous catalog marked stale", got.Servers[0].Stale)
	}
	expire = h.nextRefresh()
	if st := h.status(sid); st.RefreshingSince == "" {
		t.Errorf("servers/status: no refresh in flight after tools/list started one")
	}
	if _, err := h.callTool(map[string]any{"sessionId": sid, "name": "mcp__s__a"}); err != nil {
		t.Errorf("tools/call of a tool of the previous catalog: %v", err)
	}
	expire()
}

// TestListChangedStormBoundsListings: a server that announces a change
// before answering every tools/list (each listing overtaken, as in a storm
// of notifications) costs one refresh, at most six listings, for ten
// tools/list at once and ten after them: the last listing is served marked
// stale, and the cooldown holds further refreshes back. Each request waits
// for at most the refresh in flight and one after it, never for refreshes
// of notifications that came after it.
func TestListChangedStormBoundsListings(t *testing.T) {
	count := tempFile(t, "count")
	storm := make([]int, 0, 500)
	for n := 2; n < 502; n++ {
		storm = append(storm, n)
	}
	h := newStuckHarness(t)
	h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", fixture.Spec{
		CountFile: count, NotifyToolsChangedAtList: storm, Tools: []fixture.ToolSpec{tool("add", "add_tool"), tool("a", "echo")},
	})}, listChangedOn)
	sid := h.open(map[string]any{"startup": "eager"}).SessionID
	h.waitComplete(sid, 0)
	if _, err := h.callTool(map[string]any{"sessionId": sid, "name": "mcp__s__add", "arguments": map[string]any{"name": "b"}}); err != nil {
		t.Fatal(err)
	}
	h.notified.wait(t, 1, "the list_changed notification")

	const n = 10
	var waits []hostclient.Waiter
	for range n {
		_, w, err := h.client.Dispatch(h.ctx, protocol.MethodToolsList, map[string]any{"sessionId": sid})
		if err != nil {
			t.Fatal(err)
		}
		waits = append(waits, w)
	}
	for i, w := range waits {
		var list protocol.ToolsListResult
		if err := w.Wait(h.ctx, &list); err != nil {
			t.Fatalf("tools/list %d: %v", i, err)
		}
		if got := toolNames(list); !slices.Equal(got, []string{"a", "add", "b"}) || !list.Servers[0].Stale {
			t.Errorf("tools/list %d: %v stale %v; want a, add and b, marked stale", i, got, list.Servers[0].Stale)
		}
	}
	for i := range n {
		if list := h.toolsList(sid); !list.Servers[0].Stale {
			t.Errorf("tools/list %d after: stale %v, want stale", i, list.Servers[0].Stale)
		}
	}
	if got, _ := listings(count); got > 1+6 {
		t.Errorf("%d tools/list reached the server for %d tools/list in a storm, want at most 7 (startup, one refresh of at most 6)", got, 2*n)
	}
	h.clock.Advance(time.Minute) // past the cooldown the next request refreshes again
	h.toolsList(sid)
	if got, _ := listings(count); got < 8 || got > 1+2*6 {
		t.Errorf("%d tools/list after the cooldown, want one more refresh (8..13)", got)
	}
}
