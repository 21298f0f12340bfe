package sidecar

import (
	"context"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"
)

// startBudget is one startup's startup_timeout_sec and its start slot
// (limits.maxConcurrentStarts across the sidecar).
//
// The clock runs only while the startup is the server's own work: it
// starts when the startup gets its slot, so a server queued behind
// others (fifty servers of one config, eight slots) is not failed for
// their slowness. While the user authorizes the server in a browser (a
// flow this startup started and the host presented), the clock stops and
// the slot is lent to other startups: a person's minutes are not the
// server's slowness either (docs/protocol.md, "Limits").
type startBudget struct {
	ctx    context.Context
	sem    *semaphore.Weighted
	expire func()
	hooks  budgetHooks

	mu      sync.Mutex
	timer   *time.Timer // nil until the first slot
	left    time.Duration
	since   time.Time
	paused  bool
	holds   bool // holds a start slot
	stopped bool // the startup ended
	// joined: the startup waits for another startup's authorization;
	// expiredJoined: it did when the time ran out.
	joined, expiredJoined bool
}

// budgetHooks are test seams (testHooks.startupSlotWait and
// startupClock); nil in production.
type budgetHooks struct {
	slotWait func() // the startup waits for a slot
	clock    func() // the clock starts (or starts again)
}

// newStartBudget is a budget of timeout that calls expire once the time
// runs out; its clock starts with the first slot (acquire).
func newStartBudget(ctx context.Context, sem *semaphore.Weighted, timeout time.Duration, expire func(), hooks budgetHooks) *startBudget {
	return &startBudget{ctx: ctx, sem: sem, expire: expire, hooks: hooks, left: timeout}
}

// acquire takes a start slot and starts the clock.
func (b *startBudget) acquire() error {
	if err := b.take(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.holds = true
	if b.timer == nil && !b.stopped {
		b.runLocked()
	}
	return nil
}

// take waits for a slot, telling the hook when it has to.
func (b *startBudget) take() error {
	if b.sem.TryAcquire(1) {
		return nil
	}
	if b.hooks.slotWait != nil {
		b.hooks.slotWait()
	}
	return b.sem.Acquire(b.ctx, 1)
}

// runLocked starts the clock with the time left.
func (b *startBudget) runLocked() {
	b.since = time.Now()
	b.timer = time.AfterFunc(max(b.left, 0), b.fire)
	if b.hooks.clock != nil {
		b.hooks.clock()
	}
}

// release gives the slot back, if held. The clock runs on: the rest of
// the startup (the first tools/list) is the server's work too.
func (b *startBudget) release() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.holds {
		b.holds = false
		b.sem.Release(1)
	}
}

// stop ends the budget: the clock stops, the slot goes back, and a later
// flow of the same connection (a call that needs authorization again) no
// longer touches either.
func (b *startBudget) stop() {
	b.release()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopped = true
	if b.timer != nil {
		b.timer.Stop()
	}
}

// waitingForUser pauses (true) and resumes (false) the budget. Resuming
// waits for a slot again, and the clock goes on once it has one.
func (b *startBudget) waitingForUser(waiting bool) {
	b.mu.Lock()
	if b.stopped || waiting == b.paused {
		b.mu.Unlock()
		return
	}
	b.paused = waiting
	if waiting {
		if b.timer != nil && b.timer.Stop() {
			b.left -= time.Since(b.since)
		}
		lent := b.holds
		b.holds = false
		b.mu.Unlock()
		if lent {
			b.sem.Release(1)
		}
		return
	}
	b.mu.Unlock()
	got := b.take() == nil
	b.mu.Lock()
	defer b.mu.Unlock()
	if got {
		if b.stopped {
			b.sem.Release(1)
		} else {
			b.holds = true
		}
	}
	if b.stopped {
		return
	}
	b.runLocked()
}

// waitingForAnother notes (true) and unnotes (false) that the startup
// waits for an authorization another startup is presenting.
func (b *startBudget) waitingForAnother(waiting bool) {
	b.mu.Lock()
	b.joined = waiting
	b.mu.Unlock()
}

// fire ends the budget's time, noting what the startup was waiting for.
func (b *startBudget) fire() {
	b.mu.Lock()
	b.expiredJoined = b.joined
	b.mu.Unlock()
	b.expire()
}

// describeExpiry is why a startup that timed out was still waiting when
// it waited for a flow another startup is presenting, "" otherwise. What
// the server answered before (a 401) is no news then, and its advice (a
// bearer token variable) is wrong for a server that does OAuth.
func (b *startBudget) describeExpiry() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.expiredJoined {
		return "it was waiting for an authorization in progress in another session"
	}
	return ""
}
