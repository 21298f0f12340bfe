package sidecar

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"testing"

	"github.com/mcp-sidecar/mcp-sidecar/catalog"
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
	sess := &Session{
		srv:     &Server{logger: slog.New(slog.NewTextHandler(io.Discard, nil))},
		servers: map[string]*serverConn{},
	}
	for s := range servers {
		name := fmt.Sprintf("srv%03d", s)
		sess.names = append(sess.names, name)
		sess.servers[name] = &serverConn{sess: sess, name: name, state: protocol.StateReady, catalogSrc: protocol.CatalogLive,
			tools: syntheticServerTools(tb, corpus, s, perServer, false)}
	}
	versions := [2][]catalog.Tool{sess.servers[sess.names[0]].tools, syntheticServerTools(tb, corpus, 0, perServer, true)}
	sess.rebuildCatalog()
	if ix := sess.searchIndex(); ix.Len() != servers*perServer {
		tb.Fatalf("index of %d tools, want %d", ix.Len(), servers*perServer)
	}
	return sess, versions
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
