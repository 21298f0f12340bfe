package search

import (
	"runtime"
	"sync"
	"weak"

	"github.com/mcp-sidecar/mcp-sidecar/catalog"
)

// Shared shares the analysis of servers' tools among the indexes of many
// catalogs, such as the sessions of one sidecar: the sessions that list the
// same tools of a server in the same discovery scope use one analysis of
// them, so only the first index of a catalog pays for analysing it, and an
// index that follows a change analyses only what no other index has
// analysed already.
//
// Analyses are kept under a key per server that the caller chooses (the
// server's discovery scope): one analysis per key, the latest published,
// and only as long as some index uses it, so a Shared holds no memory of
// catalogs nobody searches any more. An analysis is taken over only when
// it is of exactly the tools asked for (same server, raw names and bytes),
// so keys that list different tools (other filters, another revision of
// the catalog) cost an analysis of the difference and nothing else.
//
// A Shared is safe for concurrent use.
type Shared struct {
	rank Ranking

	mu   sync.Mutex
	keys map[string]*sharedKey
}

// sharedKey is the latest analysis published under one key.
type sharedKey struct {
	// mu is held while the key's analysis is made: indexes that need the
	// same one at once wait for it instead of each making their own.
	mu  sync.Mutex
	seg weak.Pointer[segment]
}

// NewShared returns an empty Shared whose indexes rank with r.
func NewShared(r Ranking) *Shared {
	return &Shared{rank: r, keys: map[string]*sharedKey{}}
}

// Update returns the index of tools, a whole qualified catalog grouped by
// server, as ix.Update(tools) does, but each server's analysis is taken
// from ix, or else from the analysis published under key(server) by any
// index of s, or else made (from the closest of the two when one exists,
// analysing only the tools that differ) and published there. ix is the
// previous index of the same catalog, or nil for its first; an ix not made
// by s counts as nil. The returned index's own Update shares through s
// with the same key function.
func (s *Shared) Update(ix *Index, tools []catalog.Tool, key func(server string) string) *Index {
	base := Index{rank: s.rank}
	if ix != nil && ix.shared == s {
		base = *ix
	}
	base.shared, base.key = s, key
	return base.Update(tools)
}

// Keys is the number of keys that have an analysis some index may still
// use.
func (s *Shared) Keys() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.keys)
}

// segment returns the analysis of one server's tools for the key:
// published already, or made from old (the previous index's analysis of
// the server, nil if none) or from the published one, and published.
// analysed is the number of tools analysed to make it.
func (s *Shared) segment(key string, old *segment, tools []catalog.Tool) (seg *segment, analysed int) {
	s.mu.Lock()
	k := s.keys[key]
	if k == nil {
		k = new(sharedKey)
		s.keys[key] = k
	}
	s.mu.Unlock()

	k.mu.Lock()
	defer k.mu.Unlock()
	pub := k.seg.Value()
	if pub != nil && pub.holds(tools) {
		return pub, 0
	}
	if old == nil && pub != nil && pub.server == tools[0].Server {
		old = pub
	}
	if old != nil {
		seg, analysed = s.rank.reanalyze(old, tools)
	} else {
		seg, analysed = s.rank.analyze(tools)
	}
	k.seg = weak.Make(seg)
	// Once no index uses it, the key goes too.
	runtime.AddCleanup(seg, s.forget, key)
	if s.keyOf(key) != k {
		// The key was dropped while this analysis was made: publish it
		// again.
		s.mu.Lock()
		if s.keys[key] == nil {
			s.keys[key] = k
		}
		s.mu.Unlock()
	}
	return seg, analysed
}

func (s *Shared) keyOf(key string) *sharedKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys[key]
}

// forget drops key once its analysis is gone. A key whose analysis is
// being made is left alone: it is about to have one.
func (s *Shared) forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := s.keys[key]
	if k == nil || !k.mu.TryLock() {
		return
	}
	if k.seg.Value() == nil {
		delete(s.keys, key)
	}
	k.mu.Unlock()
}
