package sidecar_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/hostclient"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// TestListChangedOfPromptsAndResources: a prompt or resource a running
// server adds reaches the host as mcp/listChanged of its list, without
// any feature asked for, from a server of 2025-11-25 (a notification of
// the session) as from one of 2026-07-28 (on its subscriptions/listen
// stream); the listing after it has the new one.
func TestListChangedOfPromptsAndResources(t *testing.T) {
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		t.Run("protocol "+version, func(t *testing.T) {
			cfg := fixture.Config("s", fixture.Spec{
				Prompts:   []fixture.PromptSpec{{Name: "greet"}},
				Resources: []fixture.ResourceSpec{{URI: "fixture://first", Name: "first", Text: "first"}},
				Tools:     []fixture.ToolSpec{tool("add_prompt", fixture.BehaviorAddPrompt), tool("add_resource", fixture.BehaviorAddResource)},
			})
			cfg.ProtocolVersion = version
			h := newHarness(t)
			h.initialize(map[string]*config.ServerConfig{"s": cfg}, nil)
			open := h.open(map[string]any{"startup": "eager"})
			h.waitComplete(open.SessionID, 0)
			for _, tc := range []struct {
				list, tool string
				args       map[string]any
				method     string
				want       []string
			}{
				{protocol.ListPrompts, "add_prompt", map[string]any{"name": "late"}, protocol.MethodPromptsList, []string{"greet", "late"}},
				{protocol.ListResources, "add_resource", map[string]any{"uri": "fixture://late"}, protocol.MethodResourcesList, []string{"fixture://first", "fixture://late"}},
			} {
				since := len(h.notifications())
				if _, err := h.callTool(map[string]any{"sessionId": open.SessionID, "name": "mcp__s__" + tc.tool, "arguments": tc.args}); err != nil {
					t.Fatal(err)
				}
				n := h.waitForSince(since, "mcp/listChanged "+tc.list, func(n hostclient.Notification) bool {
					return n.Method == protocol.NotifyListChanged
				})
				var p protocol.ListChangedParams
				if err := json.Unmarshal(n.Params, &p); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(protocol.ListChangedParams{SessionID: open.SessionID, Server: "s", List: tc.list}, p); diff != "" {
					t.Errorf("mcp/listChanged after %s (-want +got):\n%s", tc.tool, diff)
				}
				if got := listedNames(t, h, tc.method, open.SessionID); !slices.Equal(got, tc.want) {
					t.Errorf("%s after mcp/listChanged: %v, want %v", tc.method, got, tc.want)
				}
			}
		})
	}
}

// TestListChangedStormPaced: a server that sends notifications/prompts/list_changed
// ten thousand times in half a second does not flood the host: changes
// that wait are merged, and mcp/listChanged goes out at most at its pace
// (docs/protocol.md, "Limits": a burst of 200, then 50/s), counted from
// before the storm began, so the bound holds on a machine of any speed.
// The resources list is changed after it, and its notice is the last.
func TestListChangedStormPaced(t *testing.T) {
	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", fixture.Spec{
		Prompts: []fixture.PromptSpec{{Name: "greet"}},
		Tools:   []fixture.ToolSpec{tool("storm", fixture.BehaviorToolsChanged)},
	})}, nil)
	open := h.open(map[string]any{"startup": "eager"})
	h.waitComplete(open.SessionID, 0)
	since := len(h.notifications())
	began := time.Now()
	res, err := h.callTool(map[string]any{"sessionId": open.SessionID, "name": "mcp__s__storm", "arguments": map[string]any{"list": "prompts", "perMs": 20, "ms": 500}})
	if err != nil {
		t.Fatal(err)
	}
	// One resources/list_changed after the storm: the queue sends in the
	// order of first waiting, so when its notice has come, the prompts
	// changes before it have been announced.
	if _, err := h.callTool(map[string]any{"sessionId": open.SessionID, "name": "mcp__s__storm", "arguments": map[string]any{"list": "resources", "perMs": 1, "ms": 1}}); err != nil {
		t.Fatal(err)
	}
	h.waitForSince(since, "mcp/listChanged resources", func(n hostclient.Notification) bool {
		var p protocol.ListChangedParams
		return n.Method == protocol.NotifyListChanged && json.Unmarshal(n.Params, &p) == nil && p.List == protocol.ListResources
	})
	var got int
	for _, n := range h.notifications()[since:] {
		var p protocol.ListChangedParams
		if n.Method == protocol.NotifyListChanged && json.Unmarshal(n.Params, &p) == nil && p.List == protocol.ListPrompts {
			got++
		}
	}
	if got == 0 {
		t.Fatal("no mcp/listChanged of prompts for the storm")
	}
	const burst, perSecond = 200, 50
	bound := burst + int(perSecond*time.Since(began).Seconds()) + 1
	if got > bound {
		t.Errorf("%d mcp/listChanged for a storm (%s), want at most %d", got, res, bound)
	}
}

// listedNames are the names of the prompts (or URIs of the resources)
// of every page of server s's list.
func listedNames(t *testing.T, h *harness, method, session string) []string {
	t.Helper()
	var res struct {
		Prompts []struct {
			Name string `json:"name"`
		} `json:"prompts"`
		Resources []struct {
			URI string `json:"uri"`
		} `json:"resources"`
	}
	if err := h.call(method, map[string]any{"sessionId": session, "server": "s", "all": true}, &res); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	var names []string
	for _, p := range res.Prompts {
		names = append(names, p.Name)
	}
	for _, r := range res.Resources {
		names = append(names, r.URI)
	}
	slices.Sort(names)
	return names
}
