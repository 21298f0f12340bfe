package catalog

import (
	"encoding/json"
	"math"
	"time"
)

// MaxTTL bounds how long a server's ttlMs keeps a cached catalog fresh:
// a catalog that claims more is fresh for MaxTTL. A server's word decides
// whether the sidecar lists it again; a day bounds what a mistaken or
// hostile value can hold back.
const MaxTTL = 24 * time.Hour

// Cache scopes of a result (MCP 2026-07-28, "Caching").
const (
	ScopePublic  = "public"
	ScopePrivate = "private"
)

// CacheHints are the caching hints of a list result (MCP 2026-07-28,
// modelcontextprotocol.io/specification/2026-07-28/server/utilities/caching):
// how long it is fresh and who may share it. Results of earlier protocol
// versions have neither: the zero value.
type CacheHints struct {
	// TTLMs is the result's ttlMs within [0, MaxTTL]: a negative or
	// malformed value counts 0 (stale at once), as the specification
	// says. Nil when the result had none.
	TTLMs *int64
	// Scope is the result's cacheScope: ScopePublic, ScopePrivate, or ""
	// when absent. A value of another kind counts as ScopePrivate.
	Scope string
}

// Merge combines the hints of two pages of one listing: the listing is
// fresh while every page is (the least TTL; a page without one counts 0
// once another page has one), and private when any page is.
func (h CacheHints) Merge(o CacheHints) CacheHints {
	var out CacheHints
	if h.TTLMs != nil || o.TTLMs != nil {
		out.TTLMs = new(min(deref(h.TTLMs), deref(o.TTLMs)))
	}
	switch {
	case h.Scope == ScopePrivate || o.Scope == ScopePrivate:
		out.Scope = ScopePrivate
	case h.Scope == ScopePublic || o.Scope == ScopePublic:
		out.Scope = ScopePublic
	}
	return out
}

// TTL is the hinted freshness, 0 when there is none.
func (h CacheHints) TTL() time.Duration {
	return time.Duration(deref(h.TTLMs)) * time.Millisecond
}

// Fresh reports whether a result with these hints, received at listedAt,
// is still fresh at now: a TTL was given and has not run out. A result
// without a TTL (any result of a protocol before 2026-07-28) is never
// fresh by this measure; neither is one received after now (a clock that
// went back).
func (h CacheHints) Fresh(listedAt, now time.Time) bool {
	if h.TTLMs == nil || *h.TTLMs <= 0 || listedAt.IsZero() || now.Before(listedAt) {
		return false
	}
	return now.Before(listedAt.Add(h.TTL()))
}

// Expired reports a result whose TTL has run out at now: it had one, and
// it is not fresh any more. A result without a TTL never expires by this
// measure.
func (h CacheHints) Expired(listedAt, now time.Time) bool {
	return h.TTLMs != nil && !h.Fresh(listedAt, now)
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// ttlOf reads a ttlMs member: a number, negative and malformed values 0,
// fractions cut, values past MaxTTL MaxTTL.
func ttlOf(v json.RawMessage) int64 {
	var f float64
	if json.Unmarshal(v, &f) != nil || math.IsNaN(f) || f <= 0 {
		return 0
	}
	if maxMs := float64(MaxTTL / time.Millisecond); f > maxMs {
		return int64(maxMs)
	}
	return int64(f)
}

// scopeOf reads a cacheScope member: "public" and "private" as they are,
// null as absent, anything else as private (the reading that shares
// least).
func scopeOf(v json.RawMessage) string {
	var s *string
	if json.Unmarshal(v, &s) != nil {
		return ScopePrivate
	}
	switch {
	case s == nil:
		return ""
	case *s == ScopePublic, *s == ScopePrivate:
		return *s
	}
	return ScopePrivate
}
