package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcp-sidecar/mcp-sidecar/mcpheader"
)

func ttl(ms int64) *int64 { return &ms }

// TestPaginateListingHints: the caching hints of MCP 2026-07-28 are read
// from every page and combined (the least TTL, private over public);
// results without them (every result before 2026-07-28) have none; bad
// values read the way that caches least.
func TestPaginateListingHints(t *testing.T) {
	maxMs := int64(MaxTTL / time.Millisecond)
	tests := []struct {
		name  string
		pages []string
		want  CacheHints
	}{
		{"legacy result", []string{`{"tools":[]}`}, CacheHints{}},
		{"one page", []string{`{"tools":[],"ttlMs":300000,"cacheScope":"public"}`}, CacheHints{TTLMs: ttl(300000), Scope: ScopePublic}},
		{"hints before the items", []string{`{"cacheScope":"private","ttlMs":5,"tools":[]}`}, CacheHints{TTLMs: ttl(5), Scope: ScopePrivate}},
		{"zero", []string{`{"tools":[],"ttlMs":0,"cacheScope":"private"}`}, CacheHints{TTLMs: ttl(0), Scope: ScopePrivate}},
		{"least TTL of the pages, private wins", []string{
			`{"tools":[],"ttlMs":600000,"cacheScope":"public","nextCursor":"2"}`,
			`{"tools":[],"ttlMs":60000,"cacheScope":"private","nextCursor":"3"}`,
			`{"tools":[],"ttlMs":120000,"cacheScope":"public"}`,
		}, CacheHints{TTLMs: ttl(60000), Scope: ScopePrivate}},
		{"a page without a TTL counts 0", []string{
			`{"tools":[],"ttlMs":600000,"nextCursor":"2"}`,
			`{"tools":[]}`,
		}, CacheHints{TTLMs: ttl(0)}},
		{"negative", []string{`{"tools":[],"ttlMs":-5}`}, CacheHints{TTLMs: ttl(0)}},
		{"not a number", []string{`{"tools":[],"ttlMs":"300000"}`}, CacheHints{TTLMs: ttl(0)}},
		{"fraction cut", []string{`{"tools":[],"ttlMs":1500.9}`}, CacheHints{TTLMs: ttl(1500)}},
		{"past the bound", []string{`{"tools":[],"ttlMs":1e30}`}, CacheHints{TTLMs: ttl(maxMs)}},
		{"unknown scope is private", []string{`{"tools":[],"cacheScope":"shared"}`}, CacheHints{Scope: ScopePrivate}},
		{"scope of another kind is private", []string{`{"tools":[],"cacheScope":1}`}, CacheHints{Scope: ScopePrivate}},
		{"null scope is none", []string{`{"tools":[],"cacheScope":null}`}, CacheHints{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page := 0
			l, err := PaginateListing(context.Background(), KeyTools, PageLimits{}, func(context.Context, string) (json.RawMessage, error) {
				page++
				return json.RawMessage(tt.pages[page-1]), nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, l.Hints); diff != "" {
				t.Errorf("hints (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCacheHintsFresh(t *testing.T) {
	listed := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name           string
		hints          CacheHints
		at             time.Duration // after listed
		fresh, expired bool
	}{
		{"no TTL: never fresh, never expires", CacheHints{}, time.Second, false, false},
		{"within the TTL", CacheHints{TTLMs: ttl(60000)}, 59 * time.Second, true, false},
		{"at the TTL", CacheHints{TTLMs: ttl(60000)}, 60 * time.Second, false, true},
		{"after the TTL", CacheHints{TTLMs: ttl(60000)}, time.Hour, false, true},
		{"zero TTL: stale at once", CacheHints{TTLMs: ttl(0)}, 0, false, true},
		{"a clock that went back", CacheHints{TTLMs: ttl(60000)}, -time.Second, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := listed.Add(tt.at)
			if got := tt.hints.Fresh(listed, now); got != tt.fresh {
				t.Errorf("Fresh = %v, want %v", got, tt.fresh)
			}
			if got := tt.hints.Expired(listed, now); got != tt.expired {
				t.Errorf("Expired = %v, want %v", got, tt.expired)
			}
		})
	}
	if (CacheHints{TTLMs: ttl(60000)}).Fresh(time.Time{}, listed) {
		t.Error("an entry without a listing time is fresh")
	}
}

// TestDiskCacheKeepsWhatTheServerSaid: an entry keeps the listing's
// hints, the era and version the connection negotiated and the server's
// instructions, as they were stored.
func TestDiskCacheKeepsWhatTheServerSaid(t *testing.T) {
	c := &DiskCache{Dir: t.TempDir()}
	listed := time.Date(2026, 7, 28, 1, 2, 3, 0, time.UTC)
	in := &CacheEntry{Server: "srv", ListedAt: listed, Tools: raws(`{"name":"a","inputSchema":{}}`),
		Hints: CacheHints{TTLMs: ttl(300000), Scope: ScopePrivate},
		Era:   "modern", ProtocolVersion: "2026-07-28", Instructions: "Call <search> first & \u00e9.\nThen fetch."}
	if err := c.Store(testKey, in); err != nil {
		t.Fatal(err)
	}
	out, err := c.Load(testKey)
	if err != nil {
		t.Fatal(err)
	}
	type said struct {
		Hints                          CacheHints
		Era, ProtocolVersion, Instruct string
	}
	if diff := cmp.Diff(said{in.Hints, in.Era, in.ProtocolVersion, in.Instructions}, said{out.Hints, out.Era, out.ProtocolVersion, out.Instructions}); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	// An entry of a server that gave none has none.
	if err := c.Store(testKey, &CacheEntry{Server: "srv", Tools: raws(`{"name":"a","inputSchema":{}}`)}); err != nil {
		t.Fatal(err)
	}
	if out, err = c.Load(testKey); err != nil || out.Hints.TTLMs != nil || out.Hints.Scope != "" || out.Era != "" || out.Instructions != "" {
		t.Fatalf("entry without hints: %+v, %v", out, err)
	}
}

// TestParseCatalogExcludesInvalidHeaders: a tool whose x-mcp-header
// declarations break the rules is left out and named with the rule it
// breaks; the server's other tools stay, each with its declarations read.
func TestParseCatalogExcludesInvalidHeaders(t *testing.T) {
	items := raws(
		`{"name":"valid_tool","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}}`,
		`{"name":"plain","inputSchema":{"type":"object"}}`,
		`{"name":"invalid_number_header","inputSchema":{"type":"object","properties":{"n":{"type":"number","x-mcp-header":"N"}}}}`,
		`{"name":"invalid_duplicate_diff_case","inputSchema":{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"MyField"},"b":{"type":"string","x-mcp-header":"myfield"}}}}`,
		`{"name":"invalid_space_in_name","inputSchema":{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"My Region"}}}}`,
		`{"name":"invalid_empty_header","inputSchema":{"type":"object","properties":{"a":{"type":"string","x-mcp-header":""}}}}`,
	)
	tools, excluded, err := ParseCatalog("srv", items)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	if diff := cmp.Diff([]string{"valid_tool", "plain"}, names); diff != "" {
		t.Errorf("tools kept (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(mcpheader.Bindings{{Path: []string{"region"}, Name: "Region"}}, tools[0].Headers); diff != "" {
		t.Errorf("bindings of valid_tool (-want +got):\n%s", diff)
	}
	if tools[1].Headers != nil {
		t.Errorf("a tool without declarations has bindings %v", tools[1].Headers)
	}
	var got []string
	for _, x := range excluded {
		var he *mcpheader.Error
		if !errors.As(x.Err, &he) {
			t.Fatalf("%s: error %v is not an *mcpheader.Error", x.Name, x.Err)
		}
		got = append(got, fmt.Sprintf("%s %s", x.Name, he.Rule))
	}
	want := []string{
		"invalid_number_header primitive-only",
		"invalid_duplicate_diff_case unique",
		"invalid_space_in_name charset",
		"invalid_empty_header not-empty",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("excluded (-want +got):\n%s", diff)
	}
	// ParseTools leaves them out too.
	if tools, err := ParseTools("srv", items); err != nil || len(tools) != 2 {
		t.Errorf("ParseTools: %d tools, %v", len(tools), err)
	}
}

// TestSharedListingsShareHints: a waiter gets the leader's hints with its
// items.
func TestSharedListingsShareHints(t *testing.T) {
	s := NewSharedListings()
	listing := make(chan struct{})
	release := make(chan struct{})
	s.OnWait = func(string) { close(release) }
	want := Listing{Items: raws(`{"name":"a"}`), Hints: CacheHints{TTLMs: ttl(1000), Scope: ScopePrivate}}
	lead := make(chan error, 1)
	go func() {
		_, _, err := s.ListWith(context.Background(), "k", func(context.Context) (Listing, error) {
			close(listing)
			<-release
			return want, nil
		})
		lead <- err
	}()
	<-listing // the leader's flight exists
	got, shared, err := s.ListWith(context.Background(), "k", func(context.Context) (Listing, error) {
		return Listing{}, errors.New("the waiter listed")
	})
	if err != nil || !shared {
		t.Fatalf("waiter: shared %v, %v", shared, err)
	}
	if err := <-lead; err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(rawStrings(want.Items), rawStrings(got.Items)); diff != "" {
		t.Errorf("items (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want.Hints, got.Hints); diff != "" {
		t.Errorf("hints (-want +got):\n%s", diff)
	}
}
