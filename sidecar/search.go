package sidecar

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/mcp-sidecar/mcp-sidecar/catalog"
	"github.com/mcp-sidecar/mcp-sidecar/catalog/search"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// toolsSearch ranks the session catalog for a query (catalog/search). Like
// tools/list it answers from a current catalog: startups in flight are
// waited for and stale catalogs refreshed first; dormant servers are
// searched in their cached catalog without being started.
func (s *Server) toolsSearch(ctx context.Context, rq *request) (result, error) {
	var p protocol.ToolsSearchParams
	if err := decodeParams(rq.params, &p); err != nil {
		return result{}, err
	}
	if strings.TrimSpace(p.Query) == "" {
		return result{}, invalidParams("query is required")
	}
	// limit is at least 1: 0 would ask for no results, which no host
	// means; an absent limit (or null) is the default.
	var limit struct {
		Limit json.RawMessage `json:"limit"`
	}
	_ = json.Unmarshal(rq.params, &limit) // decodeParams accepted these params
	if p.Limit < 1 && len(limit.Limit) > 0 && string(limit.Limit) != "null" {
		return result{}, invalidParams(fmt.Sprintf("limit must be at least 1, got %d (leave it out for %d results)", p.Limit, search.DefaultLimit))
	}
	sess, _, err := s.currentServers(ctx, rq, p.SessionID, p.Servers)
	if err != nil {
		return result{}, err
	}
	opt := search.Options{Limit: p.Limit}
	if p.Servers != nil {
		opt.Servers = p.Servers
	}
	var found []search.Result
	var missing []string
	if names, ok := search.SelectNames(p.Query); ok && len(names) > 0 {
		// Names that name no tool are reported, as tools/get does: the
		// model learns which of its names went wrong.
		found, missing = sess.searchIndex().Select(names, opt)
	} else if found, err = sess.searchIndex().Search(p.Query, opt); err != nil {
		if errors.Is(err, search.ErrEmptyQuery) {
			return result{}, invalidParams(fmt.Sprintf("query %q has nothing to search for", p.Query))
		}
		return result{}, invalidParams(fmt.Sprintf("query %q: %v", p.Query, err))
	}
	res := protocol.ToolsSearchResult{Results: make([]protocol.ToolSearchResult, len(found)), Missing: missing}
	for i, r := range found {
		res.Results[i] = protocol.ToolSearchResult(r)
		// Three decimals order results as well and cost the model fewer
		// tokens.
		res.Results[i].Score = math.Round(r.Score*1000) / 1000
	}
	return result{value: res}, nil
}

// toolsGetWire is protocol.ToolsGetResult as sent: each tool as tools/list
// shows it.
type toolsGetWire struct {
	Tools   []json.RawMessage `json:"tools"`
	Missing []string          `json:"missing"`
}

// toolsGet returns the full definitions of tools the host found with
// tools/search (or listed with schemas: false), in the order asked. Names
// the catalog does not have are returned in missing, not as an error: one
// stale name must not cost the model the others.
func (s *Server) toolsGet(ctx context.Context, rq *request) (result, error) {
	var p protocol.ToolsGetParams
	if err := decodeParams(rq.params, &p); err != nil {
		return result{}, err
	}
	if p.Names == nil {
		return result{}, invalidParams("names is required")
	}
	// A null decodes as "" into a string: find it where it is still null.
	var nulls struct {
		Names []*string `json:"names"`
	}
	_ = json.Unmarshal(rq.params, &nulls) // decodeParams accepted these params
	if i := slices.Index(nulls.Names, nil); i >= 0 {
		return result{}, invalidParams(fmt.Sprintf("names[%d] is null: names are strings (qualified tool names)", i))
	}
	sess, err := s.session(ctx, rq.session, p.SessionID)
	if err != nil {
		return result{}, err
	}
	cat := sess.snapshot()
	// The servers of the names asked for must be current; a name not in
	// the catalog may yet be published by a startup in flight or a stale
	// catalog, so then every server is brought up to date.
	var scs []*serverConn
	for _, n := range p.Names {
		ref, ok := cat.byName[n]
		if !ok {
			scs = sess.allServers()
			break
		}
		if !slices.Contains(scs, ref.sc) {
			scs = append(scs, ref.sc)
		}
	}
	if err := sess.current(ctx, scs); err != nil {
		return result{}, err
	}
	cat = sess.snapshot()
	res := toolsGetWire{Tools: []json.RawMessage{}, Missing: []string{}}
	var seen []string
	for _, n := range p.Names {
		if slices.Contains(seen, n) {
			continue
		}
		seen = append(seen, n)
		if ref, ok := cat.byName[n]; ok {
			res.Tools = append(res.Tools, ref.wire)
		} else {
			res.Missing = append(res.Missing, n)
		}
	}
	return result{value: res}, nil
}

// current waits for the startups in flight among scs and refreshes their
// catalogs a notification marked stale, so that what is served next is
// current (each startup is bounded by its own startup_timeout_sec).
func (sess *Session) current(ctx context.Context, scs []*serverConn) error {
	if err := waitStarting(ctx, scs); err != nil {
		return callerError(ctx, err)
	}
	sess.catchUp(ctx, scs, false)
	sess.refreshExpired(scs)
	if sess.closing() {
		// The close emptied the catalog meanwhile: no listing of it is
		// right.
		return sess.closedError()
	}
	return nil
}

// searchIndex returns the index of the session catalog, made at the
// session's first search. The build holds rebuildMu, so no rebuild can
// slip in between and leave the index behind the catalog.
func (sess *Session) searchIndex() *search.Index {
	if ix := sess.snapshot().index; ix != nil {
		return ix
	}
	sess.rebuildMu.Lock()
	defer sess.rebuildMu.Unlock()
	cat := sess.snapshot()
	if cat.index != nil {
		return cat.index
	}
	ix := sess.indexOf(nil, cat.tools)
	sess.mu.Lock()
	sess.catalog.index = ix
	sess.mu.Unlock()
	return ix
}

// indexOf returns the index of tools, the session catalog, that follows
// prev (nil for the session's first). Each server's analysis is shared
// with every session that lists the same tools in the same discovery
// scope: a session's first search takes what other sessions analysed
// already, and a change one session analysed costs the next nothing.
func (sess *Session) indexOf(prev *search.Index, tools []catalog.Tool) *search.Index {
	var ix *search.Index
	if sess.env == nil || sess.env.searches == nil {
		// A session made without initialize (internal tests).
		if prev == nil {
			prev = search.New(search.DefaultRanking())
		}
		ix = prev.Update(tools)
	} else {
		ix = sess.env.searches.Update(prev, tools, sess.scopeKeyOf)
	}
	if f := sess.srv.hook().searchIndexed; f != nil {
		f(sess.id, ix.Analysed())
	}
	return ix
}

// scopeKeyOf is the discovery scope of one of the session's servers: the
// key its analysis is shared under.
func (sess *Session) scopeKeyOf(server string) string {
	return sess.servers[server].scopeKey
}

func invalidParams(msg string) *protocol.Error {
	return protocol.NewError(protocol.CodeInvalidParams, protocol.KindInvalidParams, msg)
}

// catalogSize is the number of tools and their estimated tokens per server
// of the session catalog.
func (cat sessionCatalog) catalogSize() map[string][2]int {
	size := map[string][2]int{}
	for i, t := range cat.tools {
		s := size[t.Server]
		s[0]++
		s[1] += cat.tokens[i]
		size[t.Server] = s
	}
	return size
}

// hasCatalog reports whether the server's tools are in the session
// catalog (live or cached).
func (sc *serverConn) hasCatalog() bool {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.catalogSrc != protocol.CatalogNone && sc.state != protocol.StateDisabled
}
