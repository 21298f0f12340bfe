package sidecar

import (
	"container/heap"
	"sync"
	"time"
)

// callDeadlines ends the tool calls sent from the host's read loop
// (sentCall) whose timeout passed, with one timer for all of them. A timer
// per call costs more than its own upkeep: each new runtime timer due
// earlier than what the thread waiting in the network poller sleeps for
// wakes that thread (netpollBreak), one more context switch per call. Here
// the timer is set again only when a call is due earlier than the one it
// waits for, which calls of one timeout, coming in order, never are.
type callDeadlines struct {
	mu    sync.Mutex
	due   deadlineHeap
	timer *time.Timer // nil until the first call
	armed time.Time   // when timer fires; zero when it is stopped
}

// deadline is one call's place among the deadlines.
type deadline struct {
	at    time.Time
	call  aborter
	index int // in due; -1 once out of it
}

// aborter is a call that can be ended with a cause (sentCall).
type aborter interface{ abort(cause error) }

// add registers call, due at at.
func (d *callDeadlines) add(call aborter, at time.Time) *deadline {
	e := &deadline{at: at, call: call}
	d.push(e)
	return e
}

// push registers e (its at and call set), which the caller keeps in a
// record of its own (sentCall): one allocation fewer a call.
func (d *callDeadlines) push(e *deadline) {
	d.mu.Lock()
	defer d.mu.Unlock()
	heap.Push(&d.due, e)
	if d.armed.IsZero() || e.at.Before(d.armed) {
		d.arm(e.at)
	}
}

// remove takes a call that ended out of the deadlines. The timer stays
// as it is: when it fires early it only sets itself again.
func (d *callDeadlines) remove(e *deadline) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e.index >= 0 {
		heap.Remove(&d.due, e.index)
	}
}

// arm sets the timer to fire at at. d.mu must be held.
func (d *callDeadlines) arm(at time.Time) {
	d.armed = at
	if d.timer == nil {
		d.timer = time.AfterFunc(time.Until(at), d.fire)
		return
	}
	d.timer.Reset(time.Until(at))
}

// fire ends the calls that are due, and sets the timer for the next.
func (d *callDeadlines) fire() { d.fireAt(time.Now()) }

func (d *callDeadlines) fireAt(now time.Time) {
	d.mu.Lock()
	var expired []aborter
	for d.due.Len() > 0 && !d.due[0].at.After(now) {
		expired = append(expired, heap.Pop(&d.due).(*deadline).call)
	}
	d.armed = time.Time{}
	if d.due.Len() > 0 {
		d.arm(d.due[0].at)
	}
	d.mu.Unlock()
	for _, c := range expired {
		c.abort(errToolTimeout)
	}
}

// deadlineHeap orders deadlines, the earliest first (container/heap).
type deadlineHeap []*deadline

func (h deadlineHeap) Len() int           { return len(h) }
func (h deadlineHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h deadlineHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *deadlineHeap) Push(x any) {
	e := x.(*deadline)
	e.index = len(*h)
	*h = append(*h, e)
}
func (h *deadlineHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	e.index = -1
	*h = old[:len(old)-1]
	return e
}
