package catalog

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
)

// SharedListings shares one in-flight tools/list among overlapping startups
// of one discovery scope (docs/protocol.md, "Sessions, startup and the discovery scope"). The zero value is ready to use.
//
// Only a listing in flight is shared: the entry of a key is removed when its
// listing ends, so a caller that arrives later lists again. Nothing is
// cached here. A listing is shared under its key alone, and the sidecar's
// key is the discovery scope: a listing is never shared across scopes,
// whatever its cacheScope, so a "private" one stays with the sessions of
// the scope (the host's identity and the server's credentials) it was
// listed for.
type SharedListings struct {
	mu      sync.Mutex
	flights map[string]*flight

	// OnWait, when set before the first List, is called whenever a caller
	// begins to wait for another caller's listing of key (a caller that
	// goes round after an unusable flight is called again). It is the seam
	// for tests that must know startups joined a listing in flight.
	OnWait func(key string)
}

// NewSharedListings returns an empty SharedListings.
func NewSharedListings() *SharedListings { return new(SharedListings) }

type flightState int

const (
	running flightState = iota
	succeeded
	// unusable: the listing failed, its leader's ctx ended, or the key was
	// invalidated. Waiters go round again.
	unusable
)

// flight is one listing in progress. state and tools are guarded by
// SharedListings.mu; done is closed when state leaves running.
type flight struct {
	done       chan struct{}
	leaderDone <-chan struct{} // the leader's ctx.Done()
	state      flightState
	listing    Listing
}

// List runs list for key, sharing one in-flight listing among overlapping
// callers of the same key.
//
// The first caller (the leader) runs its own list. Callers that arrive while
// it runs wait for its result, each bounded by its own ctx: a waiter whose
// ctx ends returns ctx.Err() at once, without disturbing the others. If the
// leader's listing fails, or the leader's ctx ends before it finishes, the
// waiters do not inherit that: one of them becomes the new leader and runs
// its own list (shared again with the rest). The leader always returns its
// own list's result.
//
// shared reports whether tools came from another caller's listing. Shared
// results have their own slice, but the items' bytes are shared: callers
// must not modify them.
func (s *SharedListings) List(ctx context.Context, key string, list func(ctx context.Context) ([]json.RawMessage, error)) (tools []json.RawMessage, shared bool, err error) {
	l, shared, err := s.ListWith(ctx, key, func(ctx context.Context) (Listing, error) {
		items, err := list(ctx)
		return Listing{Items: items}, err
	})
	return l.Items, shared, err
}

// ListWith is List for a listing with its caching hints, which are shared
// with its items.
func (s *SharedListings) ListWith(ctx context.Context, key string, list func(ctx context.Context) (Listing, error)) (l Listing, shared bool, err error) {
	for {
		if err := ctx.Err(); err != nil {
			return Listing{}, false, err
		}
		s.mu.Lock()
		f, ok := s.flights[key]
		if !ok {
			f = &flight{done: make(chan struct{}), leaderDone: ctx.Done()}
			if s.flights == nil {
				s.flights = make(map[string]*flight)
			}
			s.flights[key] = f
			s.mu.Unlock()
			l, err := s.lead(ctx, key, f, list)
			return l, false, err
		}
		onWait := s.OnWait
		s.mu.Unlock()

		if onWait != nil {
			onWait(key)
		}
		select {
		case <-ctx.Done():
			return Listing{}, false, ctx.Err()
		case <-f.done:
		case <-f.leaderDone:
			// The leader gave up; its list may not have noticed yet. Do not
			// wait for it.
			s.mu.Lock()
			s.finish(key, f, unusable, Listing{})
			s.mu.Unlock()
		}
		s.mu.Lock()
		state, result := f.state, f.listing
		s.mu.Unlock()
		if state == succeeded {
			return Listing{Items: slices.Clone(result.Items), Hints: result.Hints}, true, nil
		}
		// unusable: go round; the first to get the lock leads.
	}
}

// lead runs the leader's listing and publishes its outcome, also when list
// panics (waiters must not hang on a flight nobody will finish).
func (s *SharedListings) lead(ctx context.Context, key string, f *flight, list func(ctx context.Context) (Listing, error)) (l Listing, err error) {
	finished := false
	defer func() {
		if !finished {
			s.mu.Lock()
			s.finish(key, f, unusable, Listing{})
			s.mu.Unlock()
		}
	}()
	l, err = list(ctx)
	finished = true
	s.mu.Lock()
	if err == nil {
		s.finish(key, f, succeeded, l)
	} else {
		s.finish(key, f, unusable, Listing{})
	}
	s.mu.Unlock()
	return l, err
}

// finish moves a running flight to its final state, wakes its waiters and
// drops it from the map. A flight already finished (e.g. invalidated) keeps
// its state. s.mu must be held.
func (s *SharedListings) finish(key string, f *flight, state flightState, l Listing) {
	if f.state != running {
		return
	}
	f.state = state
	f.listing = l
	close(f.done)
	if s.flights[key] == f {
		delete(s.flights, key)
	}
}

// Invalidate makes the in-flight listing of key, if any, unusable to
// everyone but its leader: callers that join from now on, and waiters not
// yet served, list anew. It is what a tools/list_changed notification in the
// scope calls for: a listing that started before it may miss the change. A
// listing that already completed is unaffected: its result was delivered
// when it completed, and its entry is gone.
func (s *SharedListings) Invalidate(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f, ok := s.flights[key]; ok {
		s.finish(key, f, unusable, Listing{})
	}
}
