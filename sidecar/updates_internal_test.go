package sidecar

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/time/rate"
)

// testQueue is an update queue on a fake clock whose sleeps advance it.
// Its sender runs only when the test calls run (the queue's goroutine,
// held back), or, with sync, inside add.
type testQueue struct {
	*updateQueue
	clock   time.Time
	sent    []string
	sentAt  []time.Duration // since the start
	notices []int
	pending func(context.Context)
	starts  int
}

func newTestQueue(sync bool) *testQueue {
	tq := &testQueue{clock: time.Unix(1000, 0)}
	start := tq.clock
	tq.updateQueue = &updateQueue{
		lim: rate.NewLimiter(updatesPerSecond, updateBurst),
		now: func() time.Time { return tq.clock },
		sleep: func(_ context.Context, d time.Duration) error {
			tq.clock = tq.clock.Add(d)
			return nil
		},
		start: func(sender func(context.Context)) bool {
			tq.starts++
			if sync {
				sender(context.Background())
			} else {
				tq.pending = sender
			}
			return true
		},
		send: func(uri string) {
			tq.sent = append(tq.sent, uri)
			tq.sentAt = append(tq.sentAt, tq.clock.Sub(start))
		},
		dropped: func(n int) { tq.notices = append(tq.notices, n) },
		queued:  func(string) {},
		isQueue: map[string]bool{},
	}
	return tq
}

// run runs the sender the queue started.
func (tq *testQueue) run() {
	f := tq.pending
	tq.pending = nil
	f(context.Background())
}

// TestUpdateQueuePace: a flood of distinct updates gets the burst, then
// the rate, and every one of them is sent, in order.
func TestUpdateQueuePace(t *testing.T) {
	tq := newTestQueue(true)
	var want []string
	for i := range 1000 {
		uri := fmt.Sprintf("file:///%d", i)
		want = append(want, uri)
		tq.add(uri)
	}
	if diff := cmp.Diff(want, tq.sent); diff != "" {
		t.Fatalf("sent (-want +got):\n%s", diff)
	}
	for i, at := range tq.sentAt {
		// The i-th update may go out once the bucket has given i tokens:
		// the burst at once, then one per 1/rate.
		earliest := time.Duration(max(0, i+1-updateBurst)) * (time.Second / updatesPerSecond)
		if at < earliest {
			t.Fatalf("update %d sent at %v, before %v: faster than %d/s after a burst of %d", i, at, earliest, updatesPerSecond, updateBurst)
		}
	}
}

// TestUpdateQueueMerges: updates of a URI that waits are merged into it,
// order is kept, and an update that arrives once its URI left the queue
// is queued again.
func TestUpdateQueueMerges(t *testing.T) {
	tq := newTestQueue(false)
	for range 100 {
		tq.add("file:///u")
	}
	tq.add("file:///v")
	tq.add("file:///u")
	tq.run()
	if diff := cmp.Diff([]string{"file:///u", "file:///v"}, tq.sent); diff != "" {
		t.Errorf("sent (-want +got):\n%s", diff)
	}
	tq.add("file:///u")
	tq.run()
	if diff := cmp.Diff([]string{"file:///u", "file:///v", "file:///u"}, tq.sent); diff != "" {
		t.Errorf("after the queue drained (-want +got):\n%s", diff)
	}
}

// TestUpdateQueueBounded: past maxWaitingUpdates URIs waiting, updates are
// dropped and counted in one notice; the queue starts one sender at a time.
func TestUpdateQueueBounded(t *testing.T) {
	tq := newTestQueue(false)
	for i := range maxWaitingUpdates + 10 {
		tq.add(fmt.Sprintf("file:///%d", i))
	}
	if tq.starts != 1 {
		t.Errorf("%d senders started for one backlog, want 1", tq.starts)
	}
	tq.run()
	if len(tq.sent) != maxWaitingUpdates {
		t.Errorf("%d updates sent, want %d", len(tq.sent), maxWaitingUpdates)
	}
	if diff := cmp.Diff([]int{10}, tq.notices); diff != "" {
		t.Errorf("notices of dropped updates (-want +got):\n%s", diff)
	}
}
