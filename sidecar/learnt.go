package sidecar

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/mcp-sidecar/mcp-sidecar/catalog"
	"github.com/mcp-sidecar/mcp-sidecar/mcpclient"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// What a connection learns of its server beyond the catalog, and what the
// sidecar does with it: the era the next connection of the scope starts
// from, the caching hints that decide whether a cached catalog is fresh,
// the server's instructions for the model, and the tools the catalog
// leaves out.

// eraHint is the era the scope's last connection negotiated, passed to
// the next connection (mcpclient.Options.Era): what a connection of this
// sidecar learnt, else what the scope's disk entry says (read once per
// scope and sidecar). EraUnknown when neither knows: the connection
// probes. A wrong hint costs one probe; mcpclient corrects it.
func (sc *serverConn) eraHint() mcpclient.Era {
	env := sc.sess.env
	env.erasMu.Lock()
	era, ok := env.eras[sc.scopeKey]
	env.erasMu.Unlock()
	if ok {
		return era
	}
	era = mcpclient.EraUnknown
	if env.disk != nil {
		// A file that cannot be used is reported (and replaced) where the
		// catalog is read or written; here it only gives no hint.
		if e, err := env.disk.Load(sc.scopeKey); err == nil && e != nil {
			era = eraOf(e.Era)
		}
	}
	env.learnEra(sc.scopeKey, era, false)
	return era
}

// learnEra records the era of key: what a connection negotiated
// (negotiated true) replaces anything; what a disk entry says fills only
// a blank.
func (e *environment) learnEra(key string, era mcpclient.Era, negotiated bool) {
	e.erasMu.Lock()
	defer e.erasMu.Unlock()
	if _, known := e.eras[key]; known && !negotiated {
		return
	}
	if e.eras == nil {
		e.eras = map[string]mcpclient.Era{}
	}
	e.eras[key] = era
}

// forgetEra drops the era hint of sc's scope after a startup that failed
// from it: mcpclient probes a wrong hint again only when the hinted
// handshake is refused (mcpclient/handshake.go, wrongEra), so a server
// that changed protocol and ignores the old handshake would fail every
// startup that starts from it. The next connection negotiates from
// scratch, in this sidecar (eras) and the next (the disk entry keeps its
// catalog, without the era). The entry is rewritten only while it still
// names the hint: a connection that negotiated since wrote what it found.
func (sc *serverConn) forgetEra(hint mcpclient.Era) {
	env := sc.sess.env
	env.learnEra(sc.scopeKey, mcpclient.EraUnknown, true)
	disk := env.disk
	if disk == nil {
		return
	}
	sc.cacheMu.Lock()
	defer sc.cacheMu.Unlock()
	e, err := disk.Load(sc.scopeKey)
	if err != nil || e == nil || eraOf(e.Era) != hint {
		// A file that cannot be used is reported (and replaced) where the
		// catalog is read or written.
		return
	}
	e.Era, e.ProtocolVersion = "", ""
	if err := disk.Store(sc.scopeKey, e); err != nil {
		if env.untrustedDir(err) {
			sc.sess.reportUntrustedDir(sc, err)
			return
		}
		sc.sess.srv.logServer(sc.sess.id, sc.name, "warning", fmt.Sprintf("era hint of server %q not dropped from the catalog cache: %v", sc.name, err))
	}
}

// eraOf reads an era a disk entry names; anything else is unknown.
func eraOf(s string) mcpclient.Era {
	switch era := mcpclient.Era(s); era {
	case mcpclient.EraModern, mcpclient.EraLegacy:
		return era
	}
	return mcpclient.EraUnknown
}

// eraName is the name servers/status gives era.
func eraName(era mcpclient.Era) string {
	switch era {
	case mcpclient.EraModern:
		return protocol.EraModern
	case mcpclient.EraLegacy:
		return protocol.EraLegacy
	}
	return ""
}

// listingHints are the caching hints of a listing made over conn: a
// result of a protocol before 2026-07-28 has none, whatever it carries
// (go-sdk's servers send ttlMs and cacheScope at every version; they
// mean something only from 2026-07-28 on).
func listingHints(conn *mcpclient.Conn, h catalog.CacheHints) catalog.CacheHints {
	if conn.Era() != mcpclient.EraModern {
		return catalog.CacheHints{}
	}
	return h
}

// freshCatalogLocked reports whether the catalog sc holds may serve a new
// connection without a listing (docs/protocol.md, "Disk cache and lazy
// startup"): it is a cached one (a dormant server's, or a crashed one's)
// that the server said is fresh (ttlMs, which only a server of 2026-07-28
// gives) and still is, and nothing announced a change since it was
// listed. sc.mu must be held.
func (sc *serverConn) freshCatalogLocked() bool {
	return sc.catalogSrc == protocol.CatalogCached && sc.list.changes == sc.list.listed &&
		sc.hints.Fresh(sc.listedAt, sc.sess.srv.now())
}

// maxInstructionsBytes bounds the server instructions the host is given
// (docs/protocol.md, "Server instructions"): they go to the model with
// every turn, as Claude Code, Codex and VS Code pass them, and a server
// must not be able to fill the context with them.
const maxInstructionsBytes = 8 << 10

// cutInstructions returns a server's instructions as the host gets them:
// with the server's secrets scrubbed, and when longer than
// maxInstructionsBytes, cut at a line or word boundary in the last
// quarter of the limit (at a character boundary where there is none) and
// marked.
func (sc *serverConn) cutInstructions(s string) string {
	if s == "" {
		return ""
	}
	s = sc.secrets().String(s)
	return cutText(s, maxInstructionsBytes)
}

func cutText(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	if i := strings.LastIndexAny(s[:cut], "\n "); i >= limit*3/4 {
		cut = i
	}
	kept := strings.TrimRight(s[:cut], " \n\t")
	return fmt.Sprintf("%s\n\n[mcp-sidecar: instructions cut: %d of %d bytes shown]", kept, len(kept), len(s))
}

// listenRefusal is conn's refusal of subscriptions/listen as the host
// sees it (secrets scrubbed), "" when there is none.
func (sc *serverConn) listenRefusal(conn *mcpclient.Conn) string {
	err := conn.ListenRefused()
	if err == nil {
		return ""
	}
	return sc.secrets().String(err.Error())
}

// noteListen reports in mcp/log, once, a refusal of conn's
// subscriptions/listen stream: what the server will not send is then
// missing without any other sign (a catalog kept current by list_changed
// goes stale unnoticed). mcpclient gives the refusal when asked only
// (Conn.ListenRefused), so it is looked at where the sidecar passes:
// startup, resources/subscribe and servers/status. The same refusal is
// reported once per server and session.
func (sc *serverConn) noteListen(conn *mcpclient.Conn) {
	if conn == nil {
		return
	}
	why := sc.listenRefusal(conn)
	sc.mu.Lock()
	report := why != "" && why != sc.listenWarned
	if report {
		sc.listenWarned = why
	}
	sc.mu.Unlock()
	if report {
		sc.sess.srv.logServer(sc.sess.id, sc.name, "warning", fmt.Sprintf(
			"server %q refused subscriptions/listen: its list_changed notifications and resource updates do not come until a stream is accepted (resources/subscribe asks again): %s", sc.name, why))
	}
}

// noteExcluded records the tools a listing left out (invalid x-mcp-header
// declarations) for servers/status and, when report is set, reports in
// mcp/log each one not reported before on this server in this session,
// naming the tool and why.
func (sc *serverConn) noteExcluded(excluded []catalog.Excluded, report bool) {
	out := make([]protocol.ExcludedTool, 0, len(excluded))
	for _, x := range excluded {
		out = append(out, protocol.ExcludedTool{Tool: x.Name, Reason: x.Err.Error()})
	}
	sc.mu.Lock()
	var news []protocol.ExcludedTool
	for _, x := range out {
		if report && !slices.Contains(sc.excludedSeen, x) {
			news = append(news, x)
			sc.excludedSeen = append(sc.excludedSeen, x)
		}
	}
	if len(out) == 0 {
		out = nil
	}
	sc.excluded = out
	sc.mu.Unlock()
	for _, x := range news {
		sc.sess.srv.logServer(sc.sess.id, sc.name, "warning", fmt.Sprintf(
			"tool %q of server %q left out of the catalog: its %s declarations are invalid (%s); the server's other tools stay",
			x.Tool, sc.name, "x-mcp-header", x.Reason))
	}
}
