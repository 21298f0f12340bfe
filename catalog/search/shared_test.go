package search

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcp-sidecar/mcp-sidecar/catalog"
)

// scopeKey is the key function of these tests: one discovery scope per
// server.
func scopeKey(server string) string { return "scope/" + server }

var sharedQueries = []string{"file", "open a PR", "rename a file", "/file/", "/^mcp__/", "select:read_file,mcp__github__list_issues,gone"}

// sameResults fails unless a and b answer every query alike.
func sameResults(t *testing.T, a, b *Index) {
	t.Helper()
	for _, q := range sharedQueries {
		if diff := cmp.Diff(mustSearch(t, a, q, Options{Limit: 20}), mustSearch(t, b, q, Options{Limit: 20})); diff != "" {
			t.Errorf("%q (-want +got):\n%s", q, diff)
		}
	}
}

// TestSharedSecondCatalogAnalysesNothing: a second catalog of the same
// tools in the same scopes takes every analysis from the first (no tool
// analysed, the very segments shared) and ranks as an index of its own.
func TestSharedSecondCatalogAnalysesNothing(t *testing.T) {
	sh := NewShared(DefaultRanking())
	tools := catalogOf(t, fixedCatalog, fixedOrder)
	first := sh.Update(nil, tools, scopeKey)
	if got, want := first.Analysed(), len(tools); got != want {
		t.Fatalf("first index analysed %d tools, want %d", got, want)
	}
	// The second catalog was listed on its own: equal bytes, not the same
	// memory.
	second := sh.Update(nil, catalogOf(t, fixedCatalog, fixedOrder), scopeKey)
	if got := second.Analysed(); got != 0 {
		t.Errorf("second index analysed %d tools, want none", got)
	}
	for i := range first.segs {
		if first.segs[i] != second.segs[i] {
			t.Errorf("segment of %s not shared", first.segs[i].server)
		}
	}
	sameResults(t, New(DefaultRanking()).Update(tools), second)
}

// TestSharedQualifiedNamesPerCatalog: catalogs that qualify the same tools
// differently share the analysis, and each finds its own names.
func TestSharedQualifiedNamesPerCatalog(t *testing.T) {
	sh := NewShared(DefaultRanking())
	a := catalogOf(t, fixedCatalog, fixedOrder)
	b := catalogOf(t, fixedCatalog, fixedOrder)
	for i := range b {
		b[i].Qualified = "other__" + b[i].Name
	}
	ixA := sh.Update(nil, a, scopeKey)
	ixB := sh.Update(nil, b, scopeKey)
	if got := ixB.Analysed(); got != 0 {
		t.Errorf("catalog B analysed %d tools", got)
	}
	if got := names(mustSearch(t, ixA, "select:read_file", Options{})); !cmp.Equal(got, []string{"mcp__fs__read_file"}) {
		t.Errorf("catalog A: %v", got)
	}
	if got := names(mustSearch(t, ixB, "select:read_file,other__list_issues", Options{})); !cmp.Equal(got, []string{"other__read_file", "other__list_issues"}) {
		t.Errorf("catalog B: %v", got)
	}
	if got := names(mustSearch(t, ixB, "/^other__browser_nav/", Options{})); !cmp.Equal(got, []string{"other__browser_navigate"}) {
		t.Errorf("catalog B, regex on its names: %v", got)
	}
	sameResults(t, New(DefaultRanking()).Update(b), ixB)
}

// TestSharedUpdateByTheChange: a refresh that changes some tools of one
// server analyses those tools only, in the catalog that sees it first; a
// second catalog that sees the same change analyses nothing; a catalog
// whose filter leaves tools out analyses nothing either. Every index ranks
// as one built from nothing.
func TestSharedUpdateByTheChange(t *testing.T) {
	sh := NewShared(DefaultRanking())
	servers := map[string][]string{"browser": fixedCatalog["browser"], "fs": fixedCatalog["fs"], "github": fixedCatalog["github"]}
	a1 := sh.Update(nil, catalogOf(t, servers, fixedOrder), scopeKey)
	b1 := sh.Update(nil, catalogOf(t, servers, fixedOrder), scopeKey)

	fs := append([]string(nil), fixedCatalog["fs"]...)
	fs[1] = strings.Replace(fs[1], "overwrite", "replace", 1)
	fs = append(fs, `{"name":"delete_file","description":"Delete a file for good.","inputSchema":{"type":"object"}}`)
	servers["fs"] = fs
	changed := catalogOf(t, servers, fixedOrder)

	a2 := sh.Update(a1, changed, scopeKey)
	if got := a2.Analysed(); got != 2 {
		t.Errorf("catalog A analysed %d tools for a change of 2", got)
	}
	// An index of a Shared shares through it on its own Update too.
	b2 := b1.Update(catalogOf(t, servers, fixedOrder))
	if got := b2.Analysed(); got != 0 {
		t.Errorf("catalog B analysed %d tools for a change A had analysed", got)
	}
	rebuilt := New(DefaultRanking()).Update(changed)
	sameResults(t, rebuilt, a2)
	sameResults(t, rebuilt, b2)
	// The old indexes are intact.
	sameResults(t, New(DefaultRanking()).Update(catalogOf(t, map[string][]string{"browser": fixedCatalog["browser"], "fs": fixedCatalog["fs"], "github": fixedCatalog["github"]}, fixedOrder)), a1)

	// A catalog that filters a tool out, in the same scope: what it keeps
	// was analysed already.
	filtered := catalogOf(t, map[string][]string{"browser": fixedCatalog["browser"], "fs": fs[1:], "github": fixedCatalog["github"]}, fixedOrder)
	c := sh.Update(nil, filtered, scopeKey)
	if got := c.Analysed(); got != 0 {
		t.Errorf("filtered catalog analysed %d tools", got)
	}
	sameResults(t, New(DefaultRanking()).Update(filtered), c)
}

// TestSharedOtherScope: the same server name in another scope has an
// analysis of its own.
func TestSharedOtherScope(t *testing.T) {
	sh := NewShared(DefaultRanking())
	tools := catalogOf(t, fixedCatalog, fixedOrder)
	sh.Update(nil, tools, scopeKey)
	other := sh.Update(nil, tools, func(server string) string { return "other/" + server })
	if got := other.Analysed(); got != len(tools) {
		t.Errorf("another scope analysed %d tools, want %d", got, len(tools))
	}
}

// TestSharedForgetsUnusedAnalyses: a Shared keeps an analysis only while
// an index uses it.
func TestSharedForgetsUnusedAnalyses(t *testing.T) {
	sh := NewShared(DefaultRanking())
	ix := sh.Update(nil, catalogOf(t, fixedCatalog, fixedOrder), scopeKey)
	if got := sh.Keys(); got != len(fixedOrder) {
		t.Fatalf("%d keys, want %d", got, len(fixedOrder))
	}
	runtime.GC()
	if got := sh.Keys(); got != len(fixedOrder) {
		t.Fatalf("%d keys while an index uses them, want %d", got, len(fixedOrder))
	}
	runtime.KeepAlive(ix)
	ix = nil
	// Cleanups run after a collection, on a goroutine of the runtime's.
	deadline := time.Now().Add(time.Minute) // a hang guard only
	for sh.Keys() != 0 && time.Now().Before(deadline) {
		runtime.GC()
		runtime.Gosched()
	}
	if got := sh.Keys(); got != 0 {
		t.Errorf("%d keys left after every index went", got)
	}
}

// TestSharedConcurrent updates and searches indexes of one Shared from
// many goroutines (run with -race): every index ranks as one built alone.
func TestSharedConcurrent(t *testing.T) {
	sh := NewShared(DefaultRanking())
	base := catalogOf(t, fixedCatalog, fixedOrder)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			var ix *Index
			for i := range 20 {
				tools := append([]catalog.Tool(nil), base...)
				// Two goroutines make each change, so analyses are shared
				// and made at once.
				n := (g/2 + i) % len(tools)
				tools[n].Raw = json.RawMessage(fmt.Sprintf(`{"name":%q,"description":"changed %d","inputSchema":{"type":"object"}}`, tools[n].Name, i))
				tools[n].Description = fmt.Sprintf("changed %d", i)
				ix = sh.Update(ix, tools, scopeKey)
				if got, want := mustSearch(t, ix, "changed", Options{}), mustSearch(t, New(DefaultRanking()).Update(tools), "changed", Options{}); !cmp.Equal(got, want) {
					t.Errorf("goroutine %d round %d: %v, want %v", g, i, names(got), names(want))
				}
			}
		})
	}
	wg.Wait()
}
