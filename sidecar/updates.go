package sidecar

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/mcp-sidecar/mcp-sidecar/internal/ctxsleep"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// A server may send notifications/resources/updated as fast as it likes;
// each is a reason for the host to read the resource again, so two waiting
// updates of one URI say no more than one. Each server of a session has an
// updateQueue: an update of a URI that is already waiting is merged into
// it, and the queue is sent at the pace of mcp/log (a token bucket, 50/s
// after a burst of 200) by a goroutine of the session that runs while
// updates wait. Nothing is lost but repetition: every update is followed by
// an mcp/resourceUpdated of its URI sent after it arrived. The URIs waiting
// are bounded (maxWaitingUpdates); past that, updates are dropped and the
// host is told in mcp/log.

const (
	updatesPerSecond  = 50
	updateBurst       = 200
	maxWaitingUpdates = 1024
)

// updateQueue holds the resource updates of one server of a session that
// wait to be sent to the host.
type updateQueue struct {
	lim *rate.Limiter
	now func() time.Time
	// sleep waits d or until ctx ends.
	sleep func(ctx context.Context, d time.Duration) error
	// start runs the sender on a goroutine that ends with ctx, or reports
	// false (the session is closing).
	start func(sender func(ctx context.Context)) bool
	// send writes one update to the host; dropped tells the host how many
	// updates did not fit; queued sees every update added (a test hook).
	send    func(uri string)
	dropped func(n int)
	queued  func(uri string)

	mu      sync.Mutex
	waiting []string        // URIs, in the order of their first waiting update
	isQueue map[string]bool // the URIs in waiting
	lost    int             // updates dropped since the last notice
	sending bool            // a sender runs
}

// newSessionQueue is a queue of sc's whose sender is a goroutine of the
// session, paced at updatesPerSecond after updateBurst: the update queue
// and the list-change queue (listnotices.go) differ only in what they send.
func newSessionQueue(sc *serverConn, send func(key string), dropped func(n int)) *updateQueue {
	sess, srv := sc.sess, sc.sess.srv
	return &updateQueue{
		lim:   rate.NewLimiter(updatesPerSecond, updateBurst),
		now:   srv.now,
		sleep: ctxsleep.Sleep,
		start: func(sender func(context.Context)) bool {
			return sess.track(func() { sender(sess.ctx) })
		},
		send:    send,
		dropped: dropped,
		queued:  func(string) {},
		isQueue: map[string]bool{},
	}
}

// newUpdateQueue is the update queue of sc.
func newUpdateQueue(sc *serverConn) *updateQueue {
	sess, srv := sc.sess, sc.sess.srv
	q := newSessionQueue(sc,
		func(uri string) {
			if f := srv.hook().resourceUpdateSending; f != nil {
				f(sess.id, sc.name, uri)
			}
			sc.mu.Lock()
			subscribed := len(sc.subscribed) > 0
			sc.mu.Unlock()
			if subscribed {
				srv.notify(protocol.NotifyResourceUpdated, protocol.ResourceUpdatedParams{SessionID: sess.id, Server: sc.name, URI: uri})
			}
		},
		func(n int) {
			srv.logServer(sess.id, sc.name, "warning", fmt.Sprintf(
				"%d resource updates of server %q dropped: %d resources already waited to be announced (mcp/resourceUpdated is sent at most %d/s)",
				n, sc.name, maxWaitingUpdates, updatesPerSecond))
		})
	q.queued = func(uri string) {
		if f := srv.hook().resourceUpdateQueued; f != nil {
			f(sess.id, sc.name, uri)
		}
	}
	return q
}

// add queues an update of uri (or merges it into the one waiting) and
// makes sure a sender runs. It does not wait for the host: it runs on the
// MCP connection's notification goroutine.
func (q *updateQueue) add(uri string) {
	q.mu.Lock()
	switch {
	case q.isQueue[uri]:
	case len(q.waiting) >= maxWaitingUpdates:
		q.lost++
	default:
		q.waiting = append(q.waiting, uri)
		q.isQueue[uri] = true
	}
	start := !q.sending
	q.sending = true
	q.mu.Unlock()
	q.queued(uri)
	if start && !q.start(q.run) {
		q.mu.Lock()
		q.sending = false // the session is closing: nothing more is sent
		q.mu.Unlock()
	}
}

// run sends the waiting updates at the queue's pace until none wait or
// ctx ends.
func (q *updateQueue) run(ctx context.Context) {
	for {
		q.mu.Lock()
		if len(q.waiting) == 0 && q.lost == 0 {
			q.sending = false
			q.mu.Unlock()
			return
		}
		q.mu.Unlock()
		now := q.now()
		if d := q.lim.ReserveN(now, 1).DelayFrom(now); d > 0 && q.sleep(ctx, d) != nil {
			return
		}
		// The URI leaves the queue only now: an update of it that arrived
		// while the token was awaited is merged into this one.
		q.mu.Lock()
		var uri string
		if len(q.waiting) > 0 {
			uri = q.waiting[0]
			q.waiting = q.waiting[1:]
			delete(q.isQueue, uri)
		}
		lost := q.lost
		q.lost = 0
		q.mu.Unlock()
		if ctx.Err() != nil {
			return
		}
		if lost > 0 {
			q.dropped(lost)
		}
		if uri != "" {
			q.send(uri)
		}
	}
}
