package bench

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/catalog"
	"github.com/mcp-sidecar/mcp-sidecar/catalog/search"
)

// searchSizes are the catalog sizes of the speed figures, in the shapes of
// the catalog benchmark (measurement 4): servers of 100 tools, 500 at 50k.
var searchSizes = []catalogShape{{10, 100}, {100, 100}, {100, 500}}

// benchSearchSizes leaves the 50k catalogs out of a one-iteration smoke
// run, where making them would take most of its time; TestSearchReport and
// longer -benchtime measure them.
func benchSearchSizes() []catalogShape {
	if smokeRun() {
		return searchSizes[:2]
	}
	return searchSizes
}

// syntheticCatalog is a qualified catalog of shape.tools() tools made from
// the real corpus: tool i is corpus tool i mod 191 under a new server and a
// numbered name, its description followed by a sentence of another corpus
// tool's description and its schema unchanged. The vocabulary, lengths and
// schemas are those of real catalogs; the postings grow with the catalog as
// they would.
func syntheticCatalog(tb testing.TB, shape catalogShape, variant int) []catalog.Tool {
	tb.Helper()
	_, corpus := loadCorpus(tb)
	rng := rand.New(rand.NewPCG(uint64(shape.tools()), uint64(variant)))
	var all []catalog.Tool
	for s := range shape.servers {
		server := fmt.Sprintf("srv%03d", s)
		items := make([]json.RawMessage, shape.toolsPer)
		for j := range items {
			i := s*shape.toolsPer + j
			items[j] = syntheticTool(corpus, i, rng, variant)
		}
		tools, err := catalog.ParseTools(server, items)
		if err != nil {
			tb.Fatal(err)
		}
		all = append(all, tools...)
	}
	catalog.Qualify(all, 0)
	return all
}

func syntheticTool(corpus []catalog.Tool, i int, rng *rand.Rand, variant int) json.RawMessage {
	base := corpus[i%len(corpus)]
	other := corpus[rng.IntN(len(corpus))]
	extra, _ := cutFirstSentence(other.Description)
	desc := strings.TrimSpace(base.Description + " " + extra)
	if variant > 0 {
		desc += fmt.Sprintf(" Revision %d.", variant)
	}
	raw, _ := json.Marshal(map[string]any{
		"name":        fmt.Sprintf("%s_%d", base.Name, i),
		"description": desc,
		"inputSchema": base.InputSchema,
	})
	return raw
}

func cutFirstSentence(s string) (string, string) {
	if i := strings.Index(s, ". "); i >= 0 {
		return s[:i+1], s[i+2:]
	}
	return s, ""
}

// searchQueries are the corpus queries, as the speed figures' workload.
func searchQueries(tb testing.TB) []string {
	var qs []string
	for _, q := range loadQueries(tb) {
		qs = append(qs, q.Query)
	}
	return qs
}

func BenchmarkSearchQuery(b *testing.B) {
	queries := searchQueries(b)
	for _, shape := range benchSearchSizes() {
		ix := search.New(search.DefaultRanking()).Update(syntheticCatalog(b, shape, 0))
		b.Run(fmt.Sprintf("tools=%d", shape.tools()), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := ix.Search(queries[i%len(queries)], search.Options{}); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkSearchRegex runs a pattern that fills its results from names
// (the scan stops early) and one that matches nothing (every name and
// description is scanned).
func BenchmarkSearchRegex(b *testing.B) {
	for _, shape := range benchSearchSizes() {
		ix := search.New(search.DefaultRanking()).Update(syntheticCatalog(b, shape, 0))
		for _, pat := range []struct{ name, re string }{{"names", "/pull.?request/"}, {"nothing", "/no such tool anywhere/"}} {
			b.Run(fmt.Sprintf("tools=%d/%s", shape.tools(), pat.name), func(b *testing.B) {
				for b.Loop() {
					if _, err := ix.Search(pat.re, search.Options{}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkSearchBaselineBM25 is the plain BM25 of the quality baseline, a
// scan of every tool per query, on the same catalogs and queries.
func BenchmarkSearchBaselineBM25(b *testing.B) {
	queries := searchQueries(b)
	for _, shape := range benchSearchSizes() {
		base := newBM25(syntheticCatalog(b, shape, 0))
		b.Run(fmt.Sprintf("tools=%d", shape.tools()), func(b *testing.B) {
			i := 0
			for b.Loop() {
				base.rank(queries[i%len(queries)], search.DefaultLimit)
				i++
			}
		})
	}
}

// indexChange is a catalog and the same catalog with one server's 100
// tools changed (every description), as a refresh or list_changed of that
// server produces.
type indexChange struct {
	before, after []catalog.Tool
	ix            *search.Index
}

func newIndexChange(tb testing.TB, shape catalogShape) *indexChange {
	before := syntheticCatalog(tb, shape, 0)
	changed := syntheticCatalog(tb, catalogShape{1, 100}, 1)
	after := append([]catalog.Tool(nil), before...)
	// The first server's first 100 tools become the changed ones (kept
	// under that server's name).
	for i := range 100 {
		t := changed[i]
		t.Server = before[i].Server
		after[i] = t
	}
	catalog.Qualify(after, 0)
	return &indexChange{before: before, after: after, ix: search.New(search.DefaultRanking()).Update(before)}
}

// BenchmarkIndexUpdate measures Update after 100 tools of one server
// changed; BenchmarkIndexBuild a build from nothing, its baseline.
func BenchmarkIndexUpdate(b *testing.B) {
	for _, shape := range benchSearchSizes() {
		c := newIndexChange(b, shape)
		b.Run(fmt.Sprintf("tools=%d", shape.tools()), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if c.ix.Update(c.after).Len() != len(c.after) {
					b.Fatal("wrong size")
				}
			}
		})
	}
}

func BenchmarkIndexBuild(b *testing.B) {
	for _, shape := range benchSearchSizes() {
		tools := syntheticCatalog(b, shape, 0)
		b.Run(fmt.Sprintf("tools=%d", shape.tools()), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				search.New(search.DefaultRanking()).Update(tools)
			}
		})
	}
}

// indexBytesPerTool is the heap an index of tools holds, per tool, beyond
// the catalog it indexes (whose strings it shares).
func indexBytesPerTool(tools []catalog.Tool) float64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	ix := search.New(search.DefaultRanking()).Update(tools)
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(ix)
	runtime.KeepAlive(tools)
	return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(len(tools))
}

// timeEach runs op reps times and returns each duration.
func timeEach(reps int, op func(i int)) []time.Duration {
	ds := make([]time.Duration, reps)
	for i := range reps {
		start := time.Now()
		op(i)
		ds[i] = time.Since(start)
	}
	return ds
}
