package sidecar

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/catalog"
	"github.com/mcp-sidecar/mcp-sidecar/catalog/search"
	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/mcpclient"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// sessionCatalog is the session's qualified view of all its servers' tools,
// rebuilt whenever one server's tools change.
type sessionCatalog struct {
	tools []catalog.Tool    // in server order, then the server's own order
	wire  []json.RawMessage // tools[i] as tools/list shows it, rendered once per rebuild
	// summary is tools[i] as tools/list with schemas: false shows it, and
	// tokens the estimated tokens of wire[i].
	summary []json.RawMessage
	tokens  []int
	byName  map[string]toolRef
	// index ranks the catalog for tools/search. It is made by the
	// session's first search (from the analyses every session shares,
	// environment.searches); from then on every rebuild hands it the new
	// catalog, so it is current before the next search.
	index *search.Index
}

type toolRef struct {
	sc      *serverConn
	tool    catalog.Tool
	wire    json.RawMessage
	summary json.RawMessage
	tokens  int
}

// storeCacheAt writes a live listing, made at listedAt when
// listState.changes was gen, to the disk cache with what conn learnt of
// the server (its era and protocol version, its instructions), unless the
// server opted out of caching or a newer listing or a later notification
// was acted on already. A failure is reported, never fatal.
func (sc *serverConn) storeCacheAt(conn *mcpclient.Conn, listing catalog.Listing, gen uint64, listedAt time.Time) {
	disk := sc.sess.env.disk
	if disk == nil || !cacheable(conn) {
		return
	}
	entry := &catalog.CacheEntry{Server: sc.name, ScopeKey: sc.scopeKey, ListedAt: listedAt, Tools: listing.Items, Hints: listing.Hints,
		Era: string(conn.Era()), ProtocolVersion: conn.ProtocolVersion(), Instructions: sc.cutInstructions(conn.Instructions())}
	sc.cacheMu.Lock()
	defer sc.cacheMu.Unlock()
	if gen < sc.cacheGen || gen == sc.cacheGen && listedAt.Before(sc.cacheWritten) {
		return
	}
	sc.cacheGen, sc.cacheWritten = gen, listedAt
	if err := disk.Store(sc.scopeKey, entry); err != nil {
		if sc.sess.env.untrustedDir(err) {
			sc.sess.reportUntrustedDir(sc, err)
			return
		}
		sc.sess.srv.logServer(sc.sess.id, sc.name, "warning", fmt.Sprintf("catalog cache for server %q not written: %v", sc.name, err))
		return
	}
	sc.sess.env.cacheRepaired(sc.scopeKey)
}

// invalidateDisk removes the scope's disk entry, which the list_changed
// notification counted as notification outdated, unless a listing that
// began after it was written already; listings that began before it are
// refused from now on. A failure is reported, never fatal.
func (sc *serverConn) invalidateDisk(notification uint64) {
	disk := sc.sess.env.disk
	if disk == nil {
		return
	}
	sc.cacheMu.Lock()
	defer sc.cacheMu.Unlock()
	if notification <= sc.cacheGen {
		return
	}
	sc.cacheGen, sc.cacheWritten = notification, time.Time{}
	if err := disk.Remove(sc.scopeKey); err != nil {
		sc.sess.srv.logServer(sc.sess.id, sc.name, "warning", fmt.Sprintf("outdated catalog cache of server %q not removed: %v", sc.name, err))
	}
}

// listTools fetches the whole catalog of conn; share lets overlapping
// startups of one discovery scope use one listing (the scope is the key:
// a listing, private or not, is never shared beyond it). The listing's
// hints are those of conn's protocol (listingHints); tools with invalid
// x-mcp-header declarations are left out and reported (noteExcluded).
func (sc *serverConn) listTools(ctx context.Context, conn *mcpclient.Conn, share bool) (catalog.Listing, []catalog.Tool, error) {
	list := func(ctx context.Context) (catalog.Listing, error) {
		return catalog.PaginateListing(ctx, "tools", catalog.DefaultPageLimits(), conn.ListToolsPage)
	}
	var listing catalog.Listing
	var err error
	if share && sc.sess.env.feature(FeatureShareStartupListing) && cacheable(conn) {
		listing, _, err = sc.sess.env.shared.ListWith(ctx, sc.scopeKey, list)
	} else {
		listing, err = list(ctx)
	}
	if err != nil {
		return catalog.Listing{}, nil, fmt.Errorf("listing tools of server %q: %w", sc.name, err)
	}
	listing.Hints = listingHints(conn, listing.Hints)
	all, excluded, err := catalog.ParseCatalog(sc.name, listing.Items)
	if err != nil {
		return catalog.Listing{}, nil, err
	}
	sc.noteExcluded(excluded, true)
	return listing, sc.filter(all), nil
}

func (sc *serverConn) filter(all []catalog.Tool) []catalog.Tool {
	tools := catalog.FilterOf(sc.cfg).Apply(all)
	for i := range tools {
		tools[i].Approval = sc.cfg.Approval(tools[i].Name)
	}
	return tools
}

// cacheable reports whether the server allows its catalog to be shared and
// cached: experimental["codex/tool-catalog-cache"].cacheable = false opts out.
func cacheable(conn *mcpclient.Conn) bool {
	raw, ok := conn.Experimental()["codex/tool-catalog-cache"]
	if !ok {
		return true
	}
	var v struct {
		Cacheable *bool `json:"cacheable"`
	}
	if json.Unmarshal(raw, &v) != nil || v.Cacheable == nil {
		return true
	}
	return *v.Cacheable
}

// rebuildCatalog recomputes the session's qualified names over every
// server that has a catalog. Rebuilds are serialised, so an older view can
// never overwrite a newer one, and each tool's rendered forms are reused
// from the previous catalog when its name and bytes did not change:
// startup of many servers does not re-render every tool once per server.
// A search index, once a search has built one, is handed the new catalog
// here: it follows every change (startup, refresh, list_changed,
// reconnect) and reuses the analysis of what did not change.
func (sess *Session) rebuildCatalog() {
	sess.rebuildMu.Lock()
	defer sess.rebuildMu.Unlock()
	var all []catalog.Tool
	for _, name := range sess.names {
		sc := sess.servers[name]
		sc.mu.Lock()
		if sc.catalogSrc != protocol.CatalogNone && sc.state != protocol.StateDisabled {
			all = append(all, sc.tools...)
		}
		sc.mu.Unlock()
	}
	sess.qualified.Qualify(all)
	prev := sess.snapshot()
	cat := sessionCatalog{
		tools:   all,
		wire:    make([]json.RawMessage, len(all)),
		summary: make([]json.RawMessage, len(all)),
		tokens:  make([]int, len(all)),
		byName:  make(map[string]toolRef, len(all)),
	}
	for i, t := range all {
		ref, ok := prev.byName[t.Qualified]
		if !ok || ref.tool.Server != t.Server || string(ref.tool.Raw) != string(t.Raw) {
			ref = sess.render(t)
		}
		ref.sc, ref.tool = sess.servers[t.Server], t
		cat.wire[i], cat.summary[i], cat.tokens[i] = ref.wire, ref.summary, ref.tokens
		cat.byName[t.Qualified] = ref
	}
	if prev.index != nil {
		cat.index = sess.indexOf(prev.index, all)
	}
	sess.mu.Lock()
	sess.catalog = cat
	sess.mu.Unlock()
}

// render makes a tool's forms for tools/list, with and without schemas.
func (sess *Session) render(t catalog.Tool) toolRef {
	w, sum, tokens, err := t.Forms()
	if err != nil { // ParseTools accepted the object: cannot happen
		sess.srv.logger.Error("rendering tool", "err", err)
		w, sum = json.RawMessage(`{}`), json.RawMessage(`{}`)
	}
	return toolRef{wire: w, summary: sum, tokens: tokens}
}

func (sess *Session) snapshot() sessionCatalog {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	return sess.catalog
}

// reportUntrustedDir reports, once per sidecar, a cache folder refused
// because another user owns it or others may write it.
func (sess *Session) reportUntrustedDir(sc *serverConn, err error) {
	if sess.env.reportBadCache(untrustedDirKey) {
		sess.srv.logServer(sess.id, sc.name, "warning", fmt.Sprintf("catalog cache not used (nothing is read from or written to it until it is fixed): %v", err))
	}
}

// loadDormant fills sc from the disk cache when the server may stay dormant
// in a lazy session (docs/protocol.md, "Disk cache and lazy
// startup") and reports whether it may.
func (sess *Session) loadDormant(sc *serverConn) bool {
	cfg := sc.cfg
	if cfg.Transport() != config.TransportStdio {
		return false
	}
	if cfg.Required && cfg.Readiness() != config.ReadinessCatalog {
		return false
	}
	disk := sess.env.disk
	if disk == nil {
		return false
	}
	entry, err := disk.Load(sc.scopeKey)
	var all []catalog.Tool
	var excluded []catalog.Excluded
	if err == nil && entry != nil {
		all, excluded, err = catalog.ParseCatalog(sc.name, entry.Tools)
	}
	if err != nil {
		if sess.env.untrustedDir(err) {
			sess.reportUntrustedDir(sc, err)
		} else if sess.env.reportBadCache(sc.scopeKey) {
			sess.srv.logServer(sess.id, sc.name, "warning", fmt.Sprintf("catalog cache for server %q ignored (it is replaced at the next live listing): %v", sc.name, err))
		}
		return false
	}
	if entry == nil {
		return false
	}
	sess.env.learnEra(sc.scopeKey, eraOf(entry.Era), false)
	tools := sc.filter(all)
	if len(tools) == 0 {
		return false
	}
	// Reported when the server lists them live; servers/status shows them
	// meanwhile.
	sc.noteExcluded(excluded, false)
	sc.setTools(tools)
	sc.catalogSrc = protocol.CatalogCached
	sc.hints, sc.listedAt = entry.Hints, entry.ListedAt
	sc.instructions = entry.Instructions
	return true
}
