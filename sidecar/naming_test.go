package sidecar_test

import (
	"strings"
	"testing"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/hostclient"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// qualifiedNames maps each listed tool's server and raw name to its
// qualified name.
func qualifiedNames(list protocol.ToolsListResult) map[[2]string]string {
	m := make(map[[2]string]string, len(list.Tools))
	for _, t := range list.Tools {
		m[[2]string{t.Server, t.Tool}] = t.Name
	}
	return m
}

// Server names may contain "__", so mcp__a__b__c could be server a's tool
// b__c or server a__b's tool c. A tool that server a adds must not rename
// server a__b's tool, and a call by a name the host listed reaches that
// tool, whatever another server does (redteam F16: the listed name was
// renamed away and answered -32013).
func TestListedNameKeepsItsTool(t *testing.T) {
	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{
		"a__b": fixture.Config("a__b", fixture.Spec{Tools: []fixture.ToolSpec{tool("c", fixture.BehaviorEcho)}}),
		"a": fixture.Config("a", fixture.Spec{Tools: []fixture.ToolSpec{
			tool("add", fixture.BehaviorAddTool), tool("remove", fixture.BehaviorRemoveTool), tool("gone", fixture.BehaviorEcho),
		}}),
	}, listChangedOn)
	sid := h.open(map[string]any{"startup": "eager"}).SessionID
	before := qualifiedNames(h.toolsList(sid))
	listed := before[[2]string{"a__b", "c"}]
	if listed == "" {
		t.Fatal("server a__b's tool c is not listed")
	}
	if listed == "mcp__a__b__c" {
		t.Errorf("server a__b's tool c is listed as %q: a name server a's tool b__c could take", listed)
	}

	// Server a adds b__c, whose readable name is mcp__a__b__c; it fails
	// when called, so that a call that reaches it shows.
	if _, err := h.callTool(map[string]any{"sessionId": sid, "name": before[[2]string{"a", "add"}], "arguments": map[string]any{"name": "b__c", "behavior": fixture.BehaviorFail}}); err != nil {
		t.Fatal(err)
	}
	waitToolsChanged(h, sid, "a", protocol.ReasonListChanged)
	after := qualifiedNames(h.toolsList(sid))
	for k, name := range before {
		if after[k] != name {
			t.Errorf("%s's tool %s was renamed from %q to %q", k[0], k[1], name, after[k])
		}
	}
	if got := after[[2]string{"a", "b__c"}]; got != "mcp__a__b__c" {
		t.Errorf("server a's new tool b__c is named %q, want mcp__a__b__c", got)
	}
	res, err := h.callTool(map[string]any{"sessionId": sid, "name": listed, "arguments": map[string]any{"mark": "a__b"}})
	if err != nil {
		t.Fatalf("call by the listed name %s: %v", listed, err)
	}
	if strings.Contains(string(res), `"isError":true`) || !strings.Contains(string(res), "mark") {
		t.Errorf("the listed name %s reached another tool: %s", listed, res)
	}

	// A tool that left keeps its name: a call by it says the tool was
	// removed, and names which.
	gone := before[[2]string{"a", "gone"}]
	mark := len(h.notifications())
	if _, err := h.callTool(map[string]any{"sessionId": sid, "name": before[[2]string{"a", "remove"}], "arguments": map[string]any{"name": "gone"}}); err != nil {
		t.Fatal(err)
	}
	h.waitForSince(mark, "toolsChanged after the removal", func(n hostclient.Notification) bool { return n.Method == protocol.NotifyToolsChanged })
	_, err = h.callTool(map[string]any{"sessionId": sid, "name": gone})
	pe := errorCode(t, err, protocol.CodeUnknownTool)
	if !strings.Contains(pe.Message, "no longer in the catalog") || pe.Data.Server != "a" || pe.Data.Tool != "gone" {
		t.Errorf("call by the name of a removed tool: %q %+v", pe.Message, pe.Data)
	}
}
