// Package memrelease returns the memory a large payload took to the OS
// some time after the payload passed.
//
// Without it, the memory a payload of 60 MB takes (the payload, its
// buffers as they grew, the copies on its way) stays with the process for
// minutes: the collector frees it, but the runtime returns freed pages
// only gradually, and its next collection waits for the heap to grow
// again, from a goal set while the payload was live. debug.FreeOSMemory
// collects and returns everything free at once.
//
// A process has one Releaser, told of every large payload whichever way it
// came (the host's frames, the servers' messages, a result cut to its
// limit): a release acts on the whole process, and one rate limit must
// hold for all of them.
package memrelease

import (
	"runtime"
	"runtime/debug"
	"sync"
	"time"
)

// When a Releaser returns memory to the OS: Delay after the last large
// payload it was told of, so that whoever held the payload has dropped
// it, and Every at most, so that a stream of large payloads costs a
// forced collection every ten seconds, not one per payload.
const (
	Delay = time.Second
	Every = 10 * time.Second
)

// Options configure a Releaser. Only Above is needed; the rest are for
// tests.
type Options struct {
	// Above is the size from which a payload counts as large; a Releaser
	// with Above not positive does nothing.
	Above int64
	// Free returns the free memory to the OS; nil: a collection, then
	// debug.FreeOSMemory.
	Free func()
	// Now is the clock; nil: time.Now.
	Now func() time.Time
	// After runs f after d on a goroutine of its own and returns its stop,
	// as time.AfterFunc; nil: time.AfterFunc.
	After func(d time.Duration, f func()) (stop func() bool)
}

// Releaser returns the memory the Go runtime holds free to the OS a while
// after a large payload: Delay after the last one it was told of, at most
// once every Every. A nil *Releaser does nothing. Its methods may be
// called from any goroutine.
type Releaser struct {
	above int64
	free  func()
	now   func() time.Time
	after func(d time.Duration, f func()) func() bool

	mu      sync.Mutex
	pending bool      // a release is scheduled
	due     time.Time // of the release scheduled
	again   bool      // a payload was noted too late for the one scheduled
	last    time.Time // of the last release
	stop    func() bool
	closed  bool
}

// New returns a Releaser, nil (which does nothing) when opts.Above is not
// positive.
func New(opts Options) *Releaser {
	if opts.Above <= 0 {
		return nil
	}
	r := &Releaser{above: opts.Above, free: opts.Free, now: opts.Now, after: opts.After}
	if r.free == nil {
		// Two collections (FreeOSMemory's is the second): what a
		// sync.Pool holds survives one, in its victim cache, and
		// encoding/json pools its encoders' buffers however large they
		// grew.
		r.free = func() { runtime.GC(); debug.FreeOSMemory() }
	}
	if r.now == nil {
		r.now = time.Now
	}
	if r.after == nil {
		r.after = func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }
	}
	return r
}

// Note tells of a payload of n bytes: read, written, or dropped after
// use. Its holder is told to tell once it is done with it too, since the
// memory of a payload still held is not released: a large one makes sure
// a release runs at least Delay after this call, within the rate limit. A
// small one costs a comparison.
func (r *Releaser) Note(n int) {
	if r == nil || int64(n) < r.above {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	now := r.now()
	if r.pending {
		// The release scheduled may come while this payload is still
		// held: one more follows it.
		if now.Add(Delay).After(r.due) {
			r.again = true
		}
		return
	}
	r.schedule(now, Delay)
}

// schedule schedules a release after at least wait, and at least Every
// after the last one. r.mu is held.
func (r *Releaser) schedule(now time.Time, wait time.Duration) {
	if !r.last.IsZero() {
		wait = max(wait, r.last.Add(Every).Sub(now))
	}
	r.pending, r.due = true, now.Add(wait)
	r.stop = r.after(wait, r.release)
}

// release returns the free memory to the OS, on the timer's goroutine,
// and schedules the next release when a payload came too late for this
// one.
func (r *Releaser) release() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.pending, r.stop, r.last = false, nil, r.now()
	if r.again {
		r.again = false
		r.schedule(r.last, Delay)
	}
	r.mu.Unlock()
	r.free()
}

// Close cancels a release scheduled and schedules none from then on.
func (r *Releaser) Close() {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	if r.stop != nil {
		r.stop()
	}
}
