package sidecar

import (
	"fmt"

	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// Admission bounds the requests a session has in flight, so that a host
// that floods one session (or a server that never answers) cannot pile up
// goroutines without end: limits.maxPendingPerSession in all, and, in a
// session of several servers, one server's requests at most half of the
// places its other servers leave free (ceil), so that a server that never
// answers cannot take the places its session's other servers need: one
// silent server holds at most half of them, a second a quarter, and so on.

// admit counts a request to sc against the session's bounds. The caller
// must call the returned release.
func (sess *Session) admit(sc *serverConn) (release func(), err error) {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if err := sess.admitLocked(); err != nil {
		return nil, err
	}
	if err := sess.assignLocked(sc); err != nil {
		sess.pending--
		return nil, err
	}
	return func() { sess.release(sc) }, nil
}

// tryAdmit counts a request whose server is not known yet (a tools/call
// before binding) against the session's bound; assign then gives it to its
// server. The caller calls release itself.
func (sess *Session) tryAdmit() error {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	return sess.admitLocked()
}

// admitTo is admit for a caller that calls release(sc) itself (the tool
// call path, which keeps the session rather than a closure).
func (sess *Session) admitTo(sc *serverConn) error {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if err := sess.admitLocked(); err != nil {
		return err
	}
	if err := sess.assignLocked(sc); err != nil {
		sess.pending--
		return err
	}
	return nil
}

// assign gives a place tryAdmit took to sc, within sc's share; on an
// error the place is still the caller's (release(nil)).
func (sess *Session) assign(sc *serverConn) error {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	return sess.assignLocked(sc)
}

func (sess *Session) admitLocked() error {
	if sess.pending >= sess.env.maxPending {
		return protocol.NewError(protocol.CodeTooManyRequests, protocol.KindTooManyRequests,
			fmt.Sprintf("session %q has %d requests in flight (limits.maxPendingPerSession); try again when some finish", sess.id, sess.pending)).Retry()
	}
	sess.pending++
	return nil
}

// assignLocked counts one of the session's places (already counted in
// pending) against sc's share. sess.mu must be held.
func (sess *Session) assignLocked(sc *serverConn) error {
	if len(sess.names) > 1 {
		others := sess.pending - 1 - sc.pending // places held for other servers (or not bound yet)
		share := (sess.env.maxPending - others + 1) / 2
		if sc.pending >= share {
			return protocol.NewError(protocol.CodeTooManyRequests, protocol.KindTooManyRequests,
				fmt.Sprintf("server %q has %d requests in flight in session %q, its share of limits.maxPendingPerSession (half the places the session's other servers leave free); try again when some finish",
					sc.name, sc.pending, sess.id)).WithServer(sc.name, "").Retry()
		}
	}
	sc.pending++
	return nil
}

// release gives back a place admit, admitTo or tryAdmit took; sc is the
// server it was given to (nil for one never assigned).
func (sess *Session) release(sc *serverConn) {
	sess.mu.Lock()
	sess.pending--
	if sc != nil {
		sc.pending--
	}
	sess.mu.Unlock()
}

// track runs f in a goroutine that close waits for, unless the session is
// closing (then it reports false and f does not run): a WaitGroup must not
// gain work once its Wait has begun.
func (sess *Session) track(f func()) bool {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if sess.closed {
		return false
	}
	sess.rounds.Add(1)
	go func() {
		defer sess.rounds.Done()
		f()
	}()
	return true
}
