package sidecar_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcp-sidecar/mcp-sidecar/catalog"
	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
	"github.com/mcp-sidecar/mcp-sidecar/mcpclient"
	"github.com/mcp-sidecar/mcp-sidecar/mcpheader"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
	"github.com/mcp-sidecar/mcp-sidecar/sidecar"
)

// Tests of what a connection learns of its server beyond the catalog: the
// era, the caching hints of MCP 2026-07-28, the server's instructions and
// the tools the catalog leaves out.

// rewriteCacheEntry changes the one catalog entry in cacheDir.
func rewriteCacheEntry(t *testing.T, cacheDir string, change func(e *catalog.CacheEntry)) {
	t.Helper()
	_, key := cacheEntryFile(t, cacheDir)
	disk := &catalog.DiskCache{Dir: cacheDir}
	e, err := disk.Load(key)
	if err != nil || e == nil {
		t.Fatalf("loading the cache entry: %v", err)
	}
	change(e)
	if err := disk.Store(key, e); err != nil {
		t.Fatal(err)
	}
}

// TestLazyStartHonoursTTL: a dormant server whose cached catalog the
// server said is fresh (ttlMs) starts on first use without listing again,
// and the call binds to the cached tool; past its TTL, or without one (a
// server of an earlier protocol), its startup lists as always.
func TestLazyStartHonoursTTL(t *testing.T) {
	tests := []struct {
		name  string
		hints func(e *catalog.CacheEntry)
		lists int // tools/list requests of the first use
	}{
		{"fresh", func(e *catalog.CacheEntry) {
			e.ListedAt, e.Hints = time.Now(), catalog.CacheHints{TTLMs: new(int64(time.Hour / time.Millisecond)), Scope: catalog.ScopePrivate}
		}, 0},
		{"past its TTL", func(e *catalog.CacheEntry) {
			e.ListedAt, e.Hints = time.Now().Add(-2*time.Hour), catalog.CacheHints{TTLMs: new(int64(time.Hour / time.Millisecond))}
		}, 1},
		{"TTL 0", func(e *catalog.CacheEntry) {
			e.ListedAt, e.Hints = time.Now(), catalog.CacheHints{TTLMs: new(int64(0))}
		}, 1},
		{"no TTL", func(e *catalog.CacheEntry) {
			e.ListedAt, e.Hints = time.Now(), catalog.CacheHints{}
		}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cacheDir := filepath.Join(dir, "cache")
			counts := filepath.Join(dir, "counts")
			cfg := fixture.Config("lazy", fixture.Spec{CountFile: counts, Tools: []fixture.ToolSpec{tool("echo", "echo")}})
			primeCache(t, cacheDir, map[string]*config.ServerConfig{"lazy": cfg}, nil)
			rewriteCacheEntry(t, cacheDir, tt.hints)
			before, _ := listings(counts)

			h := newHarness(t)
			h.initialize(map[string]*config.ServerConfig{"lazy": cfg}, map[string]any{"cacheDir": cacheDir, "features": lazyFeature})
			open := h.open(map[string]any{"sessionId": "L"})
			if open.Servers[0].State != protocol.StateDormant {
				t.Fatalf("server %+v, want dormant", open.Servers[0])
			}
			if _, err := h.callTool(map[string]any{"sessionId": "L", "name": "mcp__lazy__echo", "arguments": map[string]any{"x": 1}}); err != nil {
				t.Fatalf("first call: %v", err)
			}
			if n, _ := listings(counts); n-before != tt.lists {
				t.Errorf("the first use listed %d times, want %d", n-before, tt.lists)
			}
			names, entry := serverTools(h.toolsList("L"), "lazy")
			if diff := cmp.Diff([]string{"echo"}, names); diff != "" || entry.State != protocol.StateReady || entry.Catalog != protocol.CatalogLive {
				t.Errorf("after the first use: %+v, tools (-want +got):\n%s", entry, diff)
			}
		})
	}
}

// TestEraLearntAndPassedOn: the era a connection negotiates is kept in the
// disk entry of its scope (with the protocol version) and is the hint the
// scope's next connection starts from, in the same sidecar and in the next
// one; servers/status shows both for the connected server.
func TestEraLearntAndPassedOn(t *testing.T) {
	cacheDir := filepath.Join(t.TempDir(), "cache")
	cfg := fixture.Config("s", fixture.Spec{Tools: []fixture.ToolSpec{tool("echo", "echo")}})
	servers := map[string]*config.ServerConfig{"s": cfg}

	var mu sync.Mutex
	var hints []mcpclient.Era
	hooks := sidecar.Hooks{Connecting: func(_, server string, opts mcpclient.Options) {
		mu.Lock()
		hints = append(hints, opts.Era)
		mu.Unlock()
	}}
	seen := func() []mcpclient.Era {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(hints)
	}

	h := newHookedHarness(t, hooks)
	h.initialize(servers, map[string]any{"cacheDir": cacheDir})
	open := h.open(map[string]any{"startup": "eager"})
	wantReady(t, h, open.SessionID, "s", []string{"echo"})
	var st protocol.ServersStatusResult
	if err := h.call(protocol.MethodServersStatus, map[string]any{"sessionId": open.SessionID}, &st); err != nil {
		t.Fatal(err)
	}
	era, version := st.Servers[0].Era, st.Servers[0].ProtocolVersion
	if era != protocol.EraModern && era != protocol.EraLegacy || version == "" {
		t.Fatalf("servers/status: era %q, protocolVersion %q; want both", era, version)
	}
	// The startup's listing is written before the server is ready.
	_, key := cacheEntryFile(t, cacheDir)
	entry, err := (&catalog.DiskCache{Dir: cacheDir}).Load(key)
	if err != nil || entry == nil {
		t.Fatalf("loading the disk entry: %v", err)
	}
	if entry.Era != era || entry.ProtocolVersion != version {
		t.Errorf("disk entry: era %q, protocolVersion %q; want %q, %q", entry.Era, entry.ProtocolVersion, era, version)
	}

	// Another session of the scope in this sidecar, then a new sidecar.
	open2 := h.open(map[string]any{"startup": "eager"})
	wantReady(t, h, open2.SessionID, "s", []string{"echo"})
	h2 := newHookedHarness(t, hooks)
	h2.initialize(servers, map[string]any{"cacheDir": cacheDir})
	open3 := h2.open(map[string]any{"startup": "eager"})
	wantReady(t, h2, open3.SessionID, "s", []string{"echo"})
	want := []mcpclient.Era{mcpclient.EraUnknown, mcpclient.Era(era), mcpclient.Era(era)}
	if diff := cmp.Diff(want, seen()); diff != "" {
		t.Errorf("era hints of the three connections (-want +got):\n%s", diff)
	}
}

// modernDiscover is a DiscoverResult of a 2026-07-28 server, for the raw
// fixture.
const modernDiscover = `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"serverInfo":{"name":"raw","version":"1"}}`

// TestFailedStartupDropsEraHint: a server remembered as legacy (its disk
// entry says so) that became a server of 2026-07-28 only, which leaves
// initialize unanswered, fails the startup that starts from that hint;
// the hint goes, from this sidecar and from the disk entry (its catalog
// stays), so the next startup probes and the server starts.
func TestFailedStartupDropsEraHint(t *testing.T) {
	cacheDir := filepath.Join(t.TempDir(), "cache")
	cfg := fixture.Config("s", fixture.Spec{Raw: &fixture.RawSpec{
		Results:    map[string]json.RawMessage{"server/discover": json.RawMessage(modernDiscover)},
		Unanswered: []string{"initialize"},
	}})
	cfg.StartupTimeoutSec = seconds(20)
	// startup_timeout_sec is not part of the discovery scope: both
	// configurations share the disk entry.
	short := *cfg
	short.StartupTimeoutSec = seconds(0.5)
	primeCache(t, cacheDir, map[string]*config.ServerConfig{"s": cfg}, nil)
	rewriteCacheEntry(t, cacheDir, func(e *catalog.CacheEntry) {
		e.Era, e.ProtocolVersion = string(mcpclient.EraLegacy), "2025-11-25"
	})

	var mu sync.Mutex
	var hints []mcpclient.Era
	hooks := sidecar.Hooks{Connecting: func(_, _ string, opts mcpclient.Options) {
		mu.Lock()
		hints = append(hints, opts.Era)
		mu.Unlock()
	}}
	seen := func() []mcpclient.Era {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(hints)
	}

	h := newHookedHarness(t, hooks)
	h.initialize(map[string]*config.ServerConfig{"s": &short}, map[string]any{"cacheDir": cacheDir})
	open := h.open(map[string]any{"startup": "eager"})
	if sum := h.waitComplete(open.SessionID, 0); len(sum.Failed) != 1 {
		t.Fatalf("round 0 from the legacy hint = %+v, want s failed", sum)
	}
	_, key := cacheEntryFile(t, cacheDir)
	entry, err := (&catalog.DiskCache{Dir: cacheDir}).Load(key)
	if err != nil || entry == nil {
		t.Fatalf("loading the disk entry: %v", err)
	}
	if entry.Era != "" || entry.ProtocolVersion != "" || len(entry.Tools) != 1 {
		t.Errorf("disk entry after the failed startup: era %q, protocolVersion %q, %d tools; want no era, no version, the 1 tool", entry.Era, entry.ProtocolVersion, len(entry.Tools))
	}
	// A new sidecar, with time to start: the server starts.
	h2 := newHookedHarness(t, hooks)
	h2.initialize(map[string]*config.ServerConfig{"s": cfg}, map[string]any{"cacheDir": cacheDir})
	open2 := h2.open(map[string]any{"startup": "eager"})
	wantReady(t, h2, open2.SessionID, "s", []string{"echo"})
	// The first sidecar starts the server again without the hint, though
	// the disk entry names an era again (its outcome within 0.5 s is not
	// the point).
	_ = h.call(protocol.MethodServersReconnect, map[string]any{"sessionId": open.SessionID, "server": "s"}, nil)
	want := []mcpclient.Era{mcpclient.EraLegacy, mcpclient.EraUnknown, mcpclient.EraUnknown}
	if diff := cmp.Diff(want, seen()); diff != "" {
		t.Errorf("era hints of the three connections (-want +got):\n%s", diff)
	}
}

// TestListenRefusedShown: a server of 2026-07-28 that refuses
// subscriptions/listen has the refusal in servers/status and reported
// once in mcp/log, however often it refuses again.
func TestListenRefusedShown(t *testing.T) {
	const discover = `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{},"resources":{"subscribe":true}},"serverInfo":{"name":"raw","version":"1"}}`
	cfg := fixture.Config("s", fixture.Spec{Raw: &fixture.RawSpec{
		Results: map[string]json.RawMessage{"server/discover": json.RawMessage(discover)},
		Errors:  map[string]json.RawMessage{"subscriptions/listen": json.RawMessage(`{"code":-32603,"message":"no listening here"}`)},
	}})
	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{"s": cfg}, nil)
	open := h.open(map[string]any{"startup": "eager"})
	wantReady(t, h, open.SessionID, "s", []string{"echo"})
	status := func() protocol.ServerStatus {
		t.Helper()
		var st protocol.ServersStatusResult
		if err := h.call(protocol.MethodServersStatus, map[string]any{"sessionId": open.SessionID}, &st); err != nil {
			t.Fatal(err)
		}
		return st.Servers[0]
	}
	// The server asks for nothing before a subscription: no refusal yet.
	if st := status(); st.ListenRefused != "" {
		t.Errorf("servers/status before any stream: listenRefused %q, want none", st.ListenRefused)
	}
	for i := range 2 {
		err := h.call(protocol.MethodResourcesSubscribe, map[string]any{"sessionId": open.SessionID, "server": "s", "uri": "file:///a"}, nil)
		if err == nil {
			t.Fatalf("resources/subscribe %d: no error, want the refusal", i)
		}
		if st := status(); !strings.Contains(st.ListenRefused, "no listening here") {
			t.Errorf("servers/status after subscribe %d: listenRefused %q, want the server's refusal", i, st.ListenRefused)
		}
	}
	var warned []string
	for _, l := range logsOf(h, "s", "warning") {
		if strings.Contains(l, "subscriptions/listen") {
			warned = append(warned, l)
		}
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "no listening here") {
		t.Errorf("mcp/log warnings of the refusal: %q, want one naming it", warned)
	}
}

// logsOf returns the mcp/log texts of server at level.
func logsOf(h *harness, server, level string) []string {
	var out []string
	for _, n := range h.notifications() {
		var p protocol.LogParams
		if n.Method != protocol.NotifyLog || json.Unmarshal(n.Params, &p) != nil || p.Server != server || p.Level != level {
			continue
		}
		var text string
		if json.Unmarshal(p.Data, &text) == nil {
			out = append(out, text)
		}
	}
	return out
}

// TestInvalidHeaderToolsLeftOut: a tool whose x-mcp-header declarations
// are invalid is not in the catalog, is reported once in mcp/log (naming
// it and why) and listed in servers/status; every valid tool of the server
// stays, and each call to a tool carries the declarations read with its
// catalog, the same for every call of one catalog revision.
func TestInvalidHeaderToolsLeftOut(t *testing.T) {
	spec := fixture.Spec{Tools: []fixture.ToolSpec{
		rawTool(`{"name":"valid_tool","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}}`, "echo"),
		tool("plain", "echo"),
		rawTool(`{"name":"invalid_number_header","inputSchema":{"type":"object","properties":{"n":{"type":"number","x-mcp-header":"N"}}}}`, "echo"),
		rawTool(`{"name":"invalid_colon_in_name","inputSchema":{"type":"object","properties":{"r":{"type":"string","x-mcp-header":"Region:Primary"}}}}`, "echo"),
	}}
	var mu sync.Mutex
	var bound []mcpheader.Bindings
	h := newHookedHarness(t, sidecar.Hooks{ToolCallBound: func(_, _, tool string, headers mcpheader.Bindings) {
		if tool == "valid_tool" {
			mu.Lock()
			bound = append(bound, headers)
			mu.Unlock()
		}
	}})
	h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", spec)}, nil)
	open := h.open(map[string]any{"startup": "eager"})
	wantReady(t, h, open.SessionID, "s", []string{"plain", "valid_tool"})

	for range 2 {
		if _, err := h.callTool(map[string]any{"sessionId": open.SessionID, "name": "mcp__s__valid_tool", "arguments": map[string]any{"region": "us-west1"}}); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	calls := slices.Clone(bound)
	mu.Unlock()
	want := mcpheader.Bindings{{Path: []string{"region"}, Name: "Region"}}
	if len(calls) != 2 {
		t.Fatalf("%d calls of valid_tool seen", len(calls))
	}
	for i, b := range calls {
		if diff := cmp.Diff(want, b); diff != "" {
			t.Errorf("call %d: header declarations (-want +got):\n%s", i, diff)
		}
	}
	if &calls[0][0] != &calls[1][0] {
		t.Error("the declarations were read again for the second call, not once with the catalog")
	}
	// Listing again (a new revision of the same tools) reports nothing new.
	if err := h.call(protocol.MethodServersRefresh, map[string]any{"sessionId": open.SessionID, "server": "s"}, nil); err != nil {
		t.Fatal(err)
	}
	warnings := logsOf(h, "s", "warning")
	var about []string
	for _, w := range warnings {
		if strings.Contains(w, "x-mcp-header") {
			about = append(about, w)
		}
	}
	wantLogs := []string{
		`tool "invalid_colon_in_name" of server "s" left out of the catalog: its x-mcp-header declarations are invalid (x-mcp-header of property "r": the value "Region:Primary" has ':', which an HTTP header name cannot have); the server's other tools stay`,
		`tool "invalid_number_header" of server "s" left out of the catalog: its x-mcp-header declarations are invalid (x-mcp-header of property "n": the property has type "number"; a header can carry only a string, an integer or a boolean); the server's other tools stay`,
	}
	if diff := cmp.Diff(wantLogs, about); diff != "" {
		t.Errorf("mcp/log warnings (-want +got):\n%s", diff)
	}
	var st protocol.ServersStatusResult
	if err := h.call(protocol.MethodServersStatus, map[string]any{"sessionId": open.SessionID}, &st); err != nil {
		t.Fatal(err)
	}
	var excluded []string
	for _, x := range st.Servers[0].ExcludedTools {
		excluded = append(excluded, x.Tool)
		if x.Reason == "" {
			t.Errorf("excluded tool %s without a reason", x.Tool)
		}
	}
	if diff := cmp.Diff([]string{"invalid_colon_in_name", "invalid_number_header"}, excluded); diff != "" {
		t.Errorf("servers/status excludedTools (-want +got):\n%s", diff)
	}
	_, err := h.callTool(map[string]any{"sessionId": open.SessionID, "server": "s", "tool": "invalid_number_header", "arguments": map[string]any{"n": 1}})
	h.wantCode(err, protocol.CodeUnknownTool)
}

// TestServerInstructions: the instructions a server gives reach the host
// in tools/list and servers/status, cut with a marker past 8 KiB, without
// the server's secrets; a dormant server's come from the disk cache in
// session/open.
func TestServerInstructions(t *testing.T) {
	const secret = "sk-instructions-0123456789"
	short := "Call search before fetch. Token: " + secret
	long := strings.Repeat("Use the tools with care. ", 1000) // 25,000 bytes
	cacheDir := filepath.Join(t.TempDir(), "cache")
	servers := map[string]*config.ServerConfig{
		"short": fixture.Config("short", fixture.Spec{Instructions: short, Tools: []fixture.ToolSpec{tool("echo", "echo")}}),
		"long":  fixture.Config("long", fixture.Spec{Instructions: long, Tools: []fixture.ToolSpec{tool("echo", "echo")}}),
		"none":  fixture.Config("none", fixture.Spec{Tools: []fixture.ToolSpec{tool("echo", "echo")}}),
	}
	servers["short"].Env["API_TOKEN"] = secret
	wantShort := strings.ReplaceAll(short, secret, "REDACTED")
	check := func(t *testing.T, what string, got map[string]string) {
		t.Helper()
		if got["short"] != wantShort {
			t.Errorf("%s: short server's instructions %q, want %q", what, got["short"], wantShort)
		}
		if got["none"] != "" {
			t.Errorf("%s: a server without instructions has %q", what, got["none"])
		}
		l := got["long"]
		kept, marker, cut := strings.Cut(l, "\n\n[mcp-sidecar: instructions cut: ")
		if !cut || len(kept) > 8<<10 || !strings.HasPrefix(long, kept) || marker != fmt.Sprintf("%d of %d bytes shown]", len(kept), len(long)) {
			t.Errorf("%s: long server's instructions (%d bytes) not cut and marked: ...%q", what, len(l), l[max(0, len(l)-120):])
		}
	}

	h := newHarness(t)
	h.initialize(servers, map[string]any{"cacheDir": cacheDir})
	open := h.open(map[string]any{"startup": "eager"})
	h.waitComplete(open.SessionID, 0)
	got := map[string]string{}
	for _, s := range h.toolsList(open.SessionID).Servers {
		got[s.Name] = s.Instructions
	}
	check(t, "tools/list", got)
	var st protocol.ServersStatusResult
	if err := h.call(protocol.MethodServersStatus, map[string]any{"sessionId": open.SessionID}, &st); err != nil {
		t.Fatal(err)
	}
	got = map[string]string{}
	for _, s := range st.Servers {
		got[s.Name] = s.Instructions
	}
	check(t, "servers/status", got)
	if err := h.call(protocol.MethodSessionClose, map[string]any{"sessionId": open.SessionID}, nil); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(cacheDir, "*"))
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), secret) {
			t.Errorf("%s holds the secret", f)
		}
	}

	h2 := newHarness(t)
	h2.initialize(servers, map[string]any{"cacheDir": cacheDir, "features": lazyFeature})
	lazy := h2.open(map[string]any{"startup": "lazy"})
	got = map[string]string{}
	for _, s := range lazy.Servers {
		if s.State != protocol.StateDormant {
			t.Errorf("server %s is %s, want dormant", s.Name, s.State)
		}
		got[s.Name] = s.Instructions
	}
	check(t, "session/open", got)
}

// TestHostCapabilitiesInMCPShapes: a host that declares its capabilities
// in MCP's object shapes gets servers offered the same as one that says
// true, and the extensions it declares reach every connection as they are.
func TestHostCapabilitiesInMCPShapes(t *testing.T) {
	type offered struct {
		Elicitation, ElicitationURL, Roots, Sampling, SamplingTools bool
		Extensions                                                  map[string]string
	}
	var mu sync.Mutex
	var got []offered
	h := newHookedHarness(t, sidecar.Hooks{Connecting: func(_, _ string, o mcpclient.Options) {
		ext := map[string]string{}
		for k, v := range o.Extensions {
			ext[k] = string(v)
		}
		mu.Lock()
		got = append(got, offered{o.Elicitation, o.ElicitationURL, o.Roots, o.Sampling, o.SamplingTools, ext})
		mu.Unlock()
	}})
	h.onRequest = func(_ context.Context, method string, _ json.RawMessage) (any, error) {
		if method == protocol.RequestRoots {
			return map[string]any{"roots": []any{map[string]any{"uri": "file:///work", "name": "work"}}}, nil
		}
		return nil, fmt.Errorf("unexpected %s", method)
	}
	ui := `{"mimeTypes":["text/html;profile=mcp-app"]}`
	meta := `{"ui":{"resourceUri":"ui://weather/view.html"},"x":12345678901234567890}`
	spec := fixture.Spec{
		Tools:     []fixture.ToolSpec{rawTool(`{"name":"weather","inputSchema":{"type":"object"},"_meta":`+meta+`}`, "echo"), tool("roots", "roots")},
		Resources: []fixture.ResourceSpec{{URI: "ui://weather/view.html", Name: "view", MIMEType: "text/html;profile=mcp-app", Text: "<p>sunny</p>"}},
	}
	h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", spec)}, map[string]any{"capabilities": map[string]any{
		"roots":       map[string]any{"listChanged": true},
		"elicitation": map[string]any{"form": map[string]any{}, "url": map[string]any{}},
		"sampling":    map[string]any{"tools": map[string]any{}},
		"extensions":  map[string]any{"io.modelcontextprotocol/ui": json.RawMessage(ui), "io.modelcontextprotocol/skills": map[string]any{}},
	}})
	open := h.open(map[string]any{"startup": "eager"})
	wantReady(t, h, open.SessionID, "s", []string{"roots", "weather"})
	mu.Lock()
	want := []offered{{true, true, true, true, true, map[string]string{"io.modelcontextprotocol/ui": ui, "io.modelcontextprotocol/skills": "{}"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("what the connection offers the server (-want +got):\n%s", diff)
	}
	mu.Unlock()
	// roots: {listChanged: true} is a host that answers mcp/roots.
	res, err := h.callTool(map[string]any{"sessionId": open.SessionID, "name": "mcp__s__roots"})
	if err != nil || !strings.Contains(string(res), "file:///work") {
		t.Errorf("roots through the host: %s, %v", res, err)
	}
	// What the extension's servers send passes through as it is.
	var list json.RawMessage
	if err := h.call(protocol.MethodToolsList, map[string]any{"sessionId": open.SessionID}, &list); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(list), `"_meta":`+meta) {
		t.Errorf("the tool's _meta is not passed through as the server sent it: %s", list)
	}
	var read json.RawMessage
	if err := h.call(protocol.MethodResourcesRead, map[string]any{"sessionId": open.SessionID, "server": "s", "uri": "ui://weather/view.html"}, &read); err != nil {
		t.Fatal(err)
	}
	var contents struct {
		Contents []struct{ URI, MIMEType, Text string }
	}
	if err := json.Unmarshal(read, &contents); err != nil || len(contents.Contents) != 1 ||
		contents.Contents[0].URI != "ui://weather/view.html" || contents.Contents[0].Text != "<p>sunny</p>" {
		t.Errorf("ui:// resource: %s", read)
	}
}

// TestLiveCatalogPastTTLRefreshed: a running server's catalog used past
// the ttlMs its server gave is listed again in the background, the
// catalog in use served meanwhile; within its TTL it is not.
func TestLiveCatalogPastTTLRefreshed(t *testing.T) {
	rawLog := filepath.Join(t.TempDir(), "raw.log")
	cfg := fixture.Config("s", fixture.Spec{RawLogFile: rawLog, Raw: &fixture.RawSpec{Results: map[string]json.RawMessage{
		"server/discover": json.RawMessage(modernDiscover),
		"tools/list":      json.RawMessage(`{"resultType":"complete","tools":[{"name":"echo","inputSchema":{"type":"object"}}],"ttlMs":60000}`),
	}}})
	clock := newFakeClock()
	started := make(chan string, 4)
	h := newHookedHarness(t, sidecar.Hooks{Now: clock.Now, RefreshStarted: func(_, server string, _ time.Duration, _ func()) {
		started <- server
	}})
	h.initialize(map[string]*config.ServerConfig{"s": cfg}, nil)
	open := h.open(map[string]any{"startup": "eager"})
	wantReady(t, h, open.SessionID, "s", []string{"echo"}) // a tools/list within the TTL
	refreshing := func() string {
		t.Helper()
		var st protocol.ServersStatusResult
		if err := h.call(protocol.MethodServersStatus, map[string]any{"sessionId": open.SessionID}, &st); err != nil {
			t.Fatal(err)
		}
		return st.Servers[0].RefreshingSince
	}
	// A refresh is registered before tools/list answers.
	if r := refreshing(); r != "" {
		t.Fatalf("a refresh runs after tools/list within the TTL (since %s)", r)
	}

	clock.Advance(2 * time.Minute)
	if got := h.toolsList(open.SessionID); len(got.Tools) != 1 {
		t.Fatalf("tools/list past the TTL: %d tools, want the catalog in use", len(got.Tools))
	}
	select {
	case <-started:
	case <-time.After(testTimeout):
		t.Fatal("no refresh of the catalog past its TTL")
	}
	// servers/refresh waits for the refresh in flight, then lists once
	// more: three listings in all.
	if err := h.call(protocol.MethodServersRefresh, map[string]any{"sessionId": open.SessionID, "server": "s"}, nil); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range fixture.ReadLines(rawLog) {
		if strings.Contains(l, `"method":"tools/list"`) {
			n++
		}
	}
	if n != 3 {
		t.Errorf("tools/list requests: %d, want 3 (startup, past the TTL, servers/refresh)", n)
	}
}
