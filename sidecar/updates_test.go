package sidecar_test

import (
	"sync"
	"testing"
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
	"github.com/mcp-sidecar/mcp-sidecar/sidecar"
)

// updatingSession opens a session on a fixture server whose update tool
// sends notifications/resources/updated, subscribed to file:///u and
// file:///v, and returns update, which sends count updates of uri.
func updatingSession(t *testing.T, h *harness) (sid string, update func(uri string, count int)) {
	t.Helper()
	spec := fixture.Spec{Subscriptions: true, Tools: []fixture.ToolSpec{tool("update", fixture.BehaviorUpdate)}}
	h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", spec)}, nil)
	sid = h.open(map[string]any{"startup": "eager"}).SessionID
	for _, uri := range []string{"file:///u", "file:///v"} {
		if err := h.call(protocol.MethodResourcesSubscribe, map[string]any{"sessionId": sid, "server": "s", "uri": uri}, nil); err != nil {
			t.Fatal(err)
		}
	}
	return sid, func(uri string, count int) {
		t.Helper()
		if _, err := h.callTool(map[string]any{"sessionId": sid, "name": "mcp__s__update", "arguments": map[string]any{"uri": uri, "count": count}}); err != nil {
			t.Fatal(err)
		}
	}
}

// updatesOfU sends one update of file:///v, which the host gets after
// every update of file:///u queued before it, waits for it, and returns
// how many mcp/resourceUpdated of file:///u the host got.
func updatesOfU(h *harness, sid string, update func(string, int)) int {
	h.t.Helper()
	update("file:///v", 1)
	h.waitFor("update of v", resourceUpdated(sid, "file:///v"))
	var got int
	for _, n := range h.notifications() {
		if resourceUpdated(sid, "file:///u")(n) {
			got++
		}
	}
	return got
}

// A server flooding notifications/resources/updated for one resource
// while the host is being sent one gets it to the host once more, not once
// per update; and the update that follows the flood still arrives
// (redteam F10: 35,047 notifications in 5 s for one URI).
func TestResourceUpdatesMerged(t *testing.T) {
	const flood = 1000
	var (
		mu       sync.Mutex
		cond     = sync.NewCond(&mu)
		queued   int
		blocked  = true
		released = make(chan struct{})
	)
	h := newHookedHarness(t, sidecar.Hooks{
		ResourceUpdateQueued: func(_, _, uri string) {
			mu.Lock()
			if uri == "file:///u" {
				queued++
			}
			cond.Broadcast()
			mu.Unlock()
		},
		// The first update sent waits until the flood has been queued
		// behind it.
		ResourceUpdateSending: func(_, _, uri string) {
			mu.Lock()
			first := blocked
			blocked = false
			mu.Unlock()
			if first {
				<-released
			}
		},
	})
	sid, update := updatingSession(t, h)
	update("file:///u", flood)
	deadline := time.Now().Add(testTimeout)
	stop := time.AfterFunc(testTimeout, func() {
		mu.Lock()
		cond.Broadcast()
		mu.Unlock()
	})
	mu.Lock()
	for queued < flood && time.Now().Before(deadline) {
		cond.Wait()
	}
	n := queued
	mu.Unlock()
	stop.Stop()
	close(released)
	if n < flood {
		t.Fatalf("%d of %d updates reached the update queue", n, flood)
	}

	got := updatesOfU(h, sid, update)
	// One was being sent when the flood came; the rest is one more (or
	// the flood came before the first was taken from the queue).
	if got < 1 || got > 2 {
		t.Errorf("%d mcp/resourceUpdated for a flood of %d updates of one resource, want 1 or 2", got, flood)
	}
}

// However many updates a server sends, the host gets mcp/resourceUpdated
// at the pace of mcp/log: here the sidecar's clock stands still, so after
// the burst only the merged update of each resource is still to come.
func TestResourceUpdatesPaced(t *testing.T) {
	const flood = 5000
	clock := newFakeClock()
	h := newHookedHarness(t, sidecar.Hooks{Now: clock.Now})
	sid, update := updatingSession(t, h)
	update("file:///u", flood)
	got := updatesOfU(h, sid, update)
	// The burst (200), then one update per token the bucket lends ahead
	// of the stopped clock, each a longer wait: a few dozen at most.
	if got == 0 || got >= 1000 {
		t.Errorf("%d mcp/resourceUpdated for %d updates of one resource, want at most the burst of 200 and a few more", got, flood)
	}
	t.Logf("%d updates relayed of %d", got, flood)
}
