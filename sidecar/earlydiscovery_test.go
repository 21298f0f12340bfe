package sidecar_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
	"github.com/mcp-sidecar/mcp-sidecar/sidecar"
)

// Early discovery reports what really happened: a startup that times out,
// fails its first tools/list, or whose session closes while discovery pages
// are being fetched is reported as itself (-32012, -32011, session_closed),
// not as a replaced connection; only a replacement or a resource change is
// -32017, and a discovery retried after -32017 waits for normal readiness.
//
// The server is in process (HTTP), so that its tools/list and
// resources/list block on channels: the test knows a page is in flight.

// blockUntil waits for release or for the request's end (the client went
// away), whichever comes first.
func blockUntil(ctx context.Context, release <-chan struct{}) {
	select {
	case <-release:
	case <-ctx.Done():
	}
}

// discoveryServer serves tool a and a plugin resource; onRequest controls
// tools/list and resources/list (other requests pass).
func discoveryServer(t *testing.T, onRequest func(ctx context.Context, method string, n int) error) *ctlServer {
	t.Helper()
	cs := newCtlServer(t, []string{"a"}, onRequest)
	cs.srv.AddResource(&mcp.Resource{URI: "plugin://one", Name: "one", MIMEType: "mcp/plugin"}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "plugin://one", Text: "{}"}}}, nil
	})
	return cs
}

// releaseAtEnd closes release when the test ends, before the servers
// registered earlier close (an httptest server waits for its handlers).
func releaseAtEnd(t *testing.T, release chan struct{}) {
	t.Cleanup(func() { close(release) })
}

func TestEarlyDiscoveryReportsStartupEndings(t *testing.T) {
	tests := []struct {
		name string
		// timeout is the server's startup_timeout_sec (0: the default).
		timeout float64
		// failFirstListing fails the first tools/list once a discovery
		// page is in flight; otherwise tools/list blocks.
		failFirstListing bool
		// closeSession closes the session while the page is in flight.
		closeSession bool
		code         int64
		kind         string
		message      string
	}{
		{name: "startup timeout", timeout: 0.5, code: protocol.CodeStartupTimeout, kind: protocol.KindStartupTimeout, message: "startup_timeout_sec"},
		{name: "first listing fails", failFirstListing: true, code: protocol.CodeServerNotReady, kind: protocol.KindServerNotReady, message: "listing failed on purpose"},
		{name: "session closed", closeSession: true, code: protocol.CodeServerNotReady, kind: protocol.KindSessionClosed, message: "closed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			release := make(chan struct{})
			pageInFlight := make(chan struct{})
			cs := discoveryServer(t, func(ctx context.Context, method string, n int) error {
				switch method {
				case "tools/list":
					if tt.failFirstListing {
						blockUntil(ctx, pageInFlight)
						return errors.New("listing failed on purpose")
					}
					blockUntil(ctx, release)
				case "resources/list":
					if n == 1 {
						close(pageInFlight)
					}
					blockUntil(ctx, release)
				}
				return nil
			})
			releaseAtEnd(t, release)
			cfg := &config.ServerConfig{URL: cs.url}
			if tt.timeout > 0 {
				cfg.StartupTimeoutSec = seconds(tt.timeout)
			}
			h := newHarness(t)
			h.initialize(map[string]*config.ServerConfig{"s": cfg}, earlyOn)
			sid := h.open(map[string]any{"startup": "eager"}).SessionID
			_, w, err := h.client.Dispatch(h.ctx, protocol.MethodResourcesDiscover, map[string]any{"sessionId": sid, "server": "s"})
			if err != nil {
				t.Fatal(err)
			}
			<-pageInFlight
			if tt.closeSession {
				if err := h.call(protocol.MethodSessionClose, map[string]any{"sessionId": sid}, nil); err != nil {
					t.Fatal(err)
				}
			}
			je, data := h.wantCode(w.Wait(h.ctx, nil), tt.code)
			if data.Kind != tt.kind || !strings.Contains(je.Message, tt.message) {
				t.Errorf("discovery: %d %q %+v, want kind %s and a message saying %q", je.Code, je.Message, data, tt.kind, tt.message)
			}
		})
	}
}

// TestEarlyDiscoveryRetryWaitsForReadiness: a servers/reconnect replaces
// the startup whose connection a discovery is paging: that discovery is
// -32017; the retry does not take the early path again but waits for the
// new startup's readiness.
func TestEarlyDiscoveryRetryWaitsForReadiness(t *testing.T) {
	listings := make(chan struct{}) // closed to let every tools/list through
	var once sync.Once
	letListingsGo := func() { once.Do(func() { close(listings) }) }
	pageInFlight, pageGo := make(chan struct{}), make(chan struct{})
	cs := discoveryServer(t, func(ctx context.Context, method string, n int) error {
		switch {
		case method == "tools/list":
			blockUntil(ctx, listings)
		case method == "resources/list" && n == 1:
			close(pageInFlight)
			blockUntil(ctx, pageGo)
		}
		return nil
	})
	prepared, waits := newSignals(), make(chan bool, 16)
	h := newHookedHarness(t, sidecar.Hooks{
		RoundPrepared: func(session string, round int) {
			if round == 1 {
				prepared.fire()
			}
		},
		StartupWait: func(session, server string, early bool) { waits <- early },
	})
	t.Cleanup(letListingsGo) // before the harness closes the session
	h.initialize(map[string]*config.ServerConfig{"s": {URL: cs.url}}, earlyOn)
	sid := h.open(map[string]any{"startup": "eager"}).SessionID
	_, first, err := h.client.Dispatch(h.ctx, protocol.MethodResourcesDiscover, map[string]any{"sessionId": sid, "server": "s"})
	if err != nil {
		t.Fatal(err)
	}
	<-pageInFlight
	if early := <-waits; !early {
		t.Fatalf("the first discovery waited for readiness; want the early path")
	}
	_, reconnect, err := h.client.Dispatch(h.ctx, protocol.MethodServersReconnect, map[string]any{"sessionId": sid, "server": "s"})
	if err != nil {
		t.Fatal(err)
	}
	prepared.wait(t, 1, "the reconnect's startup round")
	close(pageGo)
	je, data := h.wantCode(first.Wait(h.ctx, nil), protocol.CodeDiscoveryRejected)
	if !data.Retryable || !strings.Contains(je.Message, "replaced") {
		t.Errorf("rejection %q %+v: want retryable, saying the connection was replaced", je.Message, data)
	}

	// The retry: it must wait for readiness, while tools/list is blocked.
	_, retry, err := h.client.Dispatch(h.ctx, protocol.MethodResourcesDiscover, map[string]any{"sessionId": sid, "server": "s"})
	if err != nil {
		t.Fatal(err)
	}
	if early := <-waits; early {
		t.Fatal("the retry after -32017 took the early path again; want normal readiness")
	}
	if n := cs.count("resources/list"); n != 1 {
		t.Fatalf("%d resources/list before readiness, want only the rejected one", n)
	}
	letListingsGo()
	var res struct {
		Resources []struct {
			URI string `json:"uri"`
		} `json:"resources"`
	}
	if err := retry.Wait(h.ctx, &res); err != nil {
		t.Fatalf("retry: %v", err)
	}
	if len(res.Resources) != 1 || res.Resources[0].URI != "plugin://one" {
		t.Errorf("retry found %+v", res.Resources)
	}
	var rc protocol.ReconnectResult
	if err := reconnect.Wait(h.ctx, &rc); err != nil || rc.State != protocol.StateReady {
		t.Errorf("reconnect: %+v %v", rc, err)
	}
	if diff := cmp.Diff(protocol.StateReady, serverState(h, sid, "s")); diff != "" {
		t.Errorf("state (-want +got):\n%s", diff)
	}
}

// TestEarlyDiscoveryRetryAfterResourceChangeWaitsForReadiness: a
// notifications/resources/list_changed while a discovery pages a starting
// server's connection rejects that discovery (-32017) although the startup
// and its connection stay; the retry does not take the early path of that
// startup again but waits for its readiness. Over stdio the notification
// is counted as it is read, before the page it precedes is delivered, so
// the rejection is certain.
func TestEarlyDiscoveryRetryAfterResourceChangeWaitsForReadiness(t *testing.T) {
	unblock, count := tempFile(t, "unblock"), tempFile(t, "count")
	waits := make(chan bool, 16)
	h := newHookedHarness(t, sidecar.Hooks{
		StartupWait: func(session, server string, early bool) { waits <- early },
	})
	unblockListing := func() {
		if err := os.WriteFile(unblock, nil, 0o600); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(unblockListing) // before the harness closes the session
	h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", fixture.Spec{
		// tools/list waits for unblock: the startup is not ready until the
		// test says so. The first resources/list answer is preceded by the
		// notification.
		BlockListUntilFile: unblock, CountFile: count,
		NotifyResourcesChangedAfterList: 1, Resources: discoverable,
		Tools: []fixture.ToolSpec{tool("a", "echo")},
	})}, earlyOn)
	sid := h.open(map[string]any{"startup": "eager"}).SessionID
	discoverParams := map[string]any{"sessionId": sid, "server": "s", "mimeTypes": []string{"mcp/plugin", "mcp/skill"}}
	nextWait := func() bool {
		t.Helper()
		select {
		case early := <-waits:
			return early
		case <-h.ctx.Done():
			t.Fatal("no request waited for the startup")
			return false
		}
	}

	_, first, err := h.client.Dispatch(h.ctx, protocol.MethodResourcesDiscover, discoverParams)
	if err != nil {
		t.Fatal(err)
	}
	if !nextWait() {
		t.Fatal("the first discovery waited for readiness; want the early path")
	}
	je, data := h.wantCode(first.Wait(h.ctx, nil), protocol.CodeDiscoveryRejected)
	if !data.Retryable || !strings.Contains(je.Message, "resources changed") {
		t.Errorf("rejection %q %+v: want retryable, saying the resources changed", je.Message, data)
	}
	if diff := cmp.Diff(protocol.StateStarting, serverState(h, sid, "s")); diff != "" {
		t.Fatalf("state after the rejection (-want +got):\n%s", diff)
	}

	// The retry: it must wait for readiness, while tools/list is blocked.
	_, retry, err := h.client.Dispatch(h.ctx, protocol.MethodResourcesDiscover, discoverParams)
	if err != nil {
		t.Fatal(err)
	}
	if nextWait() {
		t.Fatal("the retry after -32017 took the early path of the same startup again; want normal readiness")
	}
	if n := countPrefix(fixture.ReadLines(count), "resources/list "); n != 1 {
		t.Fatalf("%d resources/list before readiness, want only the rejected one", n)
	}
	unblockListing()
	var res struct {
		Resources []struct {
			URI string `json:"uri"`
		} `json:"resources"`
	}
	if err := retry.Wait(h.ctx, &res); err != nil {
		t.Fatalf("retry: %v", err)
	}
	var uris []string
	for _, r := range res.Resources {
		uris = append(uris, r.URI)
	}
	if diff := cmp.Diff([]string{"plugin://one", "skill://two"}, uris); diff != "" {
		t.Errorf("retry found (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(protocol.StateReady, serverState(h, sid, "s")); diff != "" {
		t.Errorf("state (-want +got):\n%s", diff)
	}
}

// countPrefix is the number of lines that begin with prefix.
func countPrefix(lines []string, prefix string) int {
	n := 0
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}
