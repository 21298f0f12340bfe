package sidecar

import "time"

// Hooks are the test seams of a Server (see testHooks).
type Hooks struct {
	// Now replaces the clock of restart backoff, the refresh cooldown and
	// the log rate limit.
	Now func() time.Time
	// RoundPrepared is called when a startup round of session has been
	// prepared, before it is announced or run.
	RoundPrepared func(session string, round int)
}

// WithHooks returns opts with h installed.
func WithHooks(opts Options, h Hooks) Options {
	opts.hooks = &testHooks{now: h.Now, roundPrepared: h.RoundPrepared}
	return opts
}
