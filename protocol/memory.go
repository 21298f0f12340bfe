package protocol

import (
	"runtime"
	"runtime/debug"
	"sync"
	"time"
)

// When a Conn returns memory to the OS after a large frame (see
// ConnOptions.ReleaseMemoryAbove): releaseDelay after the frame, so that
// whoever held its payload has dropped it, and releaseEvery at most, so
// that a stream of large frames costs a forced collection every ten
// seconds, not one per frame.
const (
	releaseDelay = time.Second
	releaseEvery = 10 * time.Second
)

// releaser returns the memory the Go runtime keeps free to the OS some
// time after a large payload passed. Without it, the memory a payload of
// 60 MB took (the payload, its buffers as they grew, the copies on its
// way) stays with the process for minutes: the collector frees it, but
// the runtime returns freed pages only gradually, and its next collection
// waits for the heap to grow again. debug.FreeOSMemory collects and
// returns everything free at once.
type releaser struct {
	above int64 // a frame of this many bytes or more counts as large
	free  func()
	now   func() time.Time
	// after runs f after d, on a goroutine of its own, and returns its
	// stop (time.AfterFunc's).
	after func(d time.Duration, f func()) (stop func() bool)

	mu      sync.Mutex
	pending bool      // a release is scheduled
	last    time.Time // of the last release
	stop    func() bool
	closed  bool
}

// newReleaser returns a releaser for frames of at least above bytes, nil
// (which does nothing) when above is not positive.
func newReleaser(above int64) *releaser {
	if above <= 0 {
		return nil
	}
	return &releaser{
		above: above,
		free:  func() { runtime.GC(); debug.FreeOSMemory() },
		now:   time.Now,
		after: func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop },
	}
}

// note tells of a frame of n bytes read or written: a large one schedules
// a release, unless one is scheduled already.
func (r *releaser) note(n int) {
	if r == nil || int64(n) < r.above {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pending || r.closed {
		return
	}
	r.pending = true
	wait := releaseDelay
	if !r.last.IsZero() {
		wait = max(wait, r.last.Add(releaseEvery).Sub(r.now()))
	}
	r.stop = r.after(wait, r.release)
}

// release returns the free memory to the OS, on the timer's goroutine.
func (r *releaser) release() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.pending, r.stop, r.last = false, nil, r.now()
	r.mu.Unlock()
	r.free()
}

// close cancels a release scheduled and schedules none from now on.
func (r *releaser) close() {
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
