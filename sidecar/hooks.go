package sidecar

import "time"

// testHooks are the seams tests use to order events without sleeping
// (export_test.go sets them through Options); the zero value is the
// production behaviour.
type testHooks struct {
	// now is the clock of restart backoff, the refresh cooldown and the
	// log rate limit.
	now func() time.Time
	// roundPrepared is called once a startup round has been prepared (its
	// servers marked starting), before anything announces or runs it.
	roundPrepared func(session string, round int)
}

// now is the sidecar's clock.
func (s *Server) now() time.Time {
	if h := s.opts.hooks; h != nil && h.now != nil {
		return h.now()
	}
	return time.Now()
}
