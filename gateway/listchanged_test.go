package gateway_test

import (
	"context"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-sidecar/mcp-sidecar/gateway"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
)

// TestServerListChangedReachesClients: a prompt or resource a running
// server adds reaches every client as notifications/prompts/list_changed
// or notifications/resources/list_changed, over stdio and HTTP, for a
// session of 2025-11-25 as for a 2026-07-28 client's subscriptions/listen
// stream, and the client's listing after it has the new one.
//
// The gateway also tells a client both lists changed when a server
// becomes ready, which a 2026-07-28 client gets only if its stream was
// open by then: each list is changed twice, and a notification is waited
// for after each change, so that the second wait is always for the
// server's own change.
func TestServerListChangedReachesClients(t *testing.T) {
	spec := fixture.Spec{
		Prompts:   []fixture.PromptSpec{{Name: "greet"}},
		Resources: []fixture.ResourceSpec{{URI: "fixture://first", Name: "first", Text: "first"}},
		Tools:     []fixture.ToolSpec{tool("add_prompt", fixture.BehaviorAddPrompt), tool("add_resource", fixture.BehaviorAddResource)},
	}
	for _, transport := range []string{"stdio", "http"} {
		for _, version := range []string{legacy, "2026-07-28"} {
			t.Run(transport+" "+version, func(t *testing.T) {
				g := start(t, setup{servers: map[string]any{"alpha": server(spec)}})
				prompts, resources := make(chan struct{}, 100), make(chan struct{}, 100)
				opts := &mcp.ClientOptions{
					PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { prompts <- struct{}{} },
					ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { resources <- struct{}{} },
				}
				var cs *mcp.ClientSession
				if transport == "stdio" {
					cs = connect(t, g, version, opts)
				} else {
					srv := httptest.NewServer(g.Handler(gateway.HTTPOptions{}))
					t.Cleanup(srv.Close)
					cs = httpClient(t, srv.URL, version, opts)
				}
				ctx := context.Background()
				for _, tc := range []struct {
					tool, key string
					added     []string
					changed   chan struct{}
					list      func() []string
					want      []string
				}{
					{"add_prompt", "name", []string{"late1", "late2"}, prompts, func() []string { return promptNames(t, cs) }, []string{"greet", "late1", "late2"}},
					{"add_resource", "uri", []string{"fixture://late1", "fixture://late2"}, resources, func() []string { return resourceURIs(t, cs) }, []string{"fixture://first", "fixture://late1", "fixture://late2"}},
				} {
					for _, name := range tc.added {
						if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: map[string]any{tc.key: name}}); err != nil {
							t.Fatal(err)
						}
						select {
						case <-tc.changed:
						case <-time.After(waitFor):
							t.Fatalf("%s %s: no list_changed came", tc.tool, name)
						}
					}
					if diff := cmp.Diff(tc.want, tc.list()); diff != "" {
						t.Errorf("listing after %s's list_changed (-want +got):\n%s", tc.tool, diff)
					}
				}
			})
		}
	}
}

func promptNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListPrompts(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range res.Prompts {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	return names
}

func resourceURIs(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListResources(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range res.Resources {
		uris = append(uris, r.URI)
	}
	slices.Sort(uris)
	return uris
}
