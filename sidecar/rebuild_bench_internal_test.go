package sidecar

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/catalog"
	"github.com/mcp-sidecar/mcp-sidecar/catalog/search"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// BenchmarkRebuildCatalog measures what a 100-tool change of one server
// costs the session end to end once a search has built the index: the
// rebuild of the session catalog (every name qualified again, the changed
// tools rendered again, the index handed the new catalog), against the
// index update alone on the same two catalogs (bench/README.md, "Tool
// search", reports both). Each iteration switches the first server's
// first 100 tools between two versions.
//
//	go test -run '^$' -bench RebuildCatalog ./sidecar/
func BenchmarkRebuildCatalog(b *testing.B) {
	corpus := readSearchCorpus(b)
	for _, shape := range []struct{ servers, perServer int }{{100, 100}, {100, 500}} {
		sess, versions := rebuildSession(b, corpus, shape.servers, shape.perServer)
		first := sess.servers[sess.names[0]]
		var cats [2][]catalog.Tool
		for v := range versions {
			first.tools = versions[v]
			sess.rebuildCatalog()
			cats[v] = sess.snapshot().tools
		}
		n := shape.servers * shape.perServer
		b.Run(fmt.Sprintf("tools=%d/what=rebuild", n), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				first.mu.Lock()
				first.tools = versions[i%2]
				first.mu.Unlock()
				sess.rebuildCatalog()
				i++
			}
			if sess.snapshot().index.Len() != n {
				b.Fatalf("index of %d tools, want %d", sess.snapshot().index.Len(), n)
			}
		})
		b.Run(fmt.Sprintf("tools=%d/what=index-update", n), func(b *testing.B) {
			b.ReportAllocs()
			ix := sess.snapshot().index
			i := 0
			for b.Loop() {
				ix = ix.Update(cats[i%2])
				i++
			}
		})
	}
}

// readSearchCorpus reads the real tools of bench/corpus/tools.json.
func readSearchCorpus(tb testing.TB) []catalog.Tool {
	raw, err := os.ReadFile("../bench/corpus/tools.json")
	if err != nil {
		tb.Fatal(err)
	}
	var f struct {
		Servers []struct {
			Name  string            `json:"name"`
			Tools []json.RawMessage `json:"tools"`
		} `json:"servers"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		tb.Fatal(err)
	}
	var all []catalog.Tool
	for _, s := range f.Servers {
		tools, err := catalog.ParseTools(s.Name, s.Tools)
		if err != nil {
			tb.Fatalf("%s: %v", s.Name, err)
		}
		all = append(all, tools...)
	}
	return all
}

// rebuildSession is a session of servers ready with perServer tools each,
// made of the corpus tools under numbered names, its catalog built and
// its index made by a search. versions are the first server's tools
// before and after a change of its first 100 tools' descriptions.
func rebuildSession(tb testing.TB, corpus []catalog.Tool, servers, perServer int) (*Session, [2][]catalog.Tool) {
	sess := readySession(tb, benchEnvironment(), corpus, servers, perServer)
	versions := [2][]catalog.Tool{sess.servers[sess.names[0]].tools, syntheticServerTools(tb, corpus, 0, perServer, true)}
	if ix := sess.searchIndex(); ix.Len() != servers*perServer {
		tb.Fatalf("index of %d tools, want %d", ix.Len(), servers*perServer)
	}
	return sess, versions
}

// benchEnvironment is the part of what initialize establishes that the
// session catalog and its search index use.
func benchEnvironment() *environment {
	return &environment{searches: search.NewShared(search.DefaultRanking())}
}

// readySession is a session of env with servers ready with perServer
// tools each, made of the corpus tools under numbered names (each server
// in a discovery scope of its own, the same in every session of env), its
// catalog built; no search has run. The tools are listed anew for each
// session: equal bytes, not the same memory.
func readySession(tb testing.TB, env *environment, corpus []catalog.Tool, servers, perServer int) *Session {
	sess := &Session{
		srv:     &Server{logger: slog.New(slog.NewTextHandler(io.Discard, nil))},
		env:     env,
		servers: map[string]*serverConn{},
	}
	for s := range servers {
		name := fmt.Sprintf("srv%03d", s)
		sess.names = append(sess.names, name)
		sess.servers[name] = &serverConn{sess: sess, name: name, scopeKey: "scope-" + name, state: protocol.StateReady, catalogSrc: protocol.CatalogLive,
			tools: syntheticServerTools(tb, corpus, s, perServer, false)}
	}
	sess.rebuildCatalog()
	return sess
}

// BenchmarkSecondSessionFirstSearch measures the first tools/search of a
// session (its index made, then the query) when another session of the
// same servers in the same discovery scopes has searched already, at 10k
// tools (100 servers of 100): with the analyses shared between sessions
// (environment.searches, shared=yes), the second session analyses no tool;
// without (shared=no: each session analyses its own catalog) it analyses
// all 10k (bench/README.md, "Tool search"). Each iteration is a new
// session with its tools listed anew. cpu-ns/op is the process's CPU time
// in the timed part, which a loaded machine inflates less than ns/op.
//
//	go test -run '^$' -bench SecondSessionFirstSearch -benchtime 10x ./sidecar/
func BenchmarkSecondSessionFirstSearch(b *testing.B) {
	corpus := readSearchCorpus(b)
	const servers, perServer = 100, 100
	for _, shared := range []bool{false, true} {
		name := map[bool]string{false: "shared=no", true: "shared=yes"}[shared]
		b.Run(name, func(b *testing.B) {
			env := benchEnvironment()
			if !shared {
				env.searches = nil
			}
			first := readySession(b, env, corpus, servers, perServer)
			if _, err := first.searchIndex().Search("open a pull request", search.Options{}); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			var cpu time.Duration
			for b.Loop() {
				b.StopTimer()
				sess := readySession(b, env, corpus, servers, perServer)
				// The garbage of making the session is collected before
				// the timed part, not during it.
				runtime.GC()
				before := processCPU()
				b.StartTimer()
				res, err := sess.searchIndex().Search("open a pull request", search.Options{})
				b.StopTimer()
				cpu += processCPU() - before
				if err != nil || len(res) == 0 {
					b.Fatalf("search: %v, %d results", err, len(res))
				}
				b.StartTimer()
			}
			if cpu > 0 {
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
			}
			runtime.KeepAlive(first)
		})
	}
}

// syntheticServerTools are the tools of server number s: corpus tools
// under numbered names, the first 100 descriptions revised when revised
// is set.
func syntheticServerTools(tb testing.TB, corpus []catalog.Tool, s, perServer int, revised bool) []catalog.Tool {
	name := fmt.Sprintf("srv%03d", s)
	items := make([]json.RawMessage, perServer)
	for j := range items {
		base := corpus[(s*perServer+j)%len(corpus)]
		desc := base.Description
		if revised && j < 100 {
			desc += " Revision 1."
		}
		items[j], _ = json.Marshal(map[string]any{
			"name":        fmt.Sprintf("%s_%d", base.Name, s*perServer+j),
			"description": desc,
			"inputSchema": base.InputSchema,
		})
	}
	tools, err := catalog.ParseTools(name, items)
	if err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	return tools
}
