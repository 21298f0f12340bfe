// Package testclock is a clock tests move by hand, for the injectable
// clocks of the sidecar, the gateway and oauth: tests order time-driven
// events with it rather than by sleeping.
package testclock

import (
	"sync"
	"time"
)

// Clock stands still until Advance moves it; it is safe for concurrent
// use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// New is a clock that reads start.
func New(start time.Time) *Clock { return &Clock{now: start} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
