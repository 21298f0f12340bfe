// Package outbox keeps the messages of one writer in the order they were
// sent, for senders that wait until theirs is written and for senders that
// must not wait (a read loop, which has to read on while the other end
// does not read). One sender writes at a time; what is sent meanwhile waits
// in the outbox, and whoever writes writes it before it stops.
package outbox

import (
	"errors"
	"sync"
	"time"
)

// ErrEnded is the error of a message the outbox was abandoned with: the
// connection ended before its turn.
var ErrEnded = errors.New("the connection ended before the message was written")

// An Outbox orders the messages of one writer.
type Outbox struct {
	write func(parts [][]byte) error // one message; only the one writing calls it
	// Max is how many messages may wait for a goroutine of SendLater's
	// before SendLater waits too (zero: no bound). A sender that floods
	// while the other end never reads is then held back rather than
	// followed into unbounded memory.
	Max int

	mu      sync.Mutex
	writing bool // a sender or a drain goroutine writes
	queue   []entry

	queued func(waits bool) // tests: a message was queued (waits: its sender waits)
}

type entry struct {
	parts [][]byte
	done  chan error // the waiting sender's; nil when nobody waits
}

// New returns an outbox that writes each message, given in parts, with
// write.
func New(write func(parts [][]byte) error) *Outbox {
	return &Outbox{write: write}
}

// Send writes a message after the messages sent before it and returns
// once it is written, with write's error.
func (o *Outbox) Send(parts ...[]byte) error {
	o.mu.Lock()
	if o.writing {
		done := make(chan error, 1)
		o.queue = append(o.queue, entry{parts, done})
		o.mu.Unlock()
		if o.queued != nil {
			o.queued(true)
		}
		return <-done
	}
	o.writing = true
	o.mu.Unlock()
	err := o.write(parts)
	o.drain()
	return err
}

// SendLater hands a message over to be written in its turn and returns
// without waiting for it. When nobody is writing, try (if not nil) writes
// what it can at once without blocking and returns the parts left; what is
// left, and what waits behind it, a goroutine started with spawn writes.
// spawn reports false when it cannot start one (the connection ended):
// the outbox is then abandoned, its waiting senders get ErrEnded. Errors of
// messages sent later are not reported here: write is the place to learn
// of them.
func (o *Outbox) SendLater(parts [][]byte, try func([][]byte) [][]byte, spawn func(func()) bool) {
	o.mu.Lock()
	if o.Max > 0 && len(o.queue) >= o.Max {
		o.mu.Unlock()
		_ = o.Send(parts...)
		return
	}
	if o.writing {
		o.queue = append(o.queue, entry{parts: parts})
		o.mu.Unlock()
		if o.queued != nil {
			o.queued(false)
		}
		return
	}
	o.writing = true
	o.mu.Unlock()
	if try != nil {
		parts = try(parts)
	}
	o.mu.Lock()
	if len(parts) == 0 && len(o.queue) == 0 {
		o.writing = false
		o.mu.Unlock()
		return
	}
	o.mu.Unlock()
	if !spawn(func() {
		if len(parts) > 0 {
			_ = o.write(parts)
		}
		o.drain()
	}) {
		o.abandon()
	}
}

// Flush waits until the messages sent so far are written (or their write
// failed), for at most d.
func (o *Outbox) Flush(d time.Duration) {
	o.mu.Lock()
	if !o.writing {
		o.mu.Unlock()
		return
	}
	done := make(chan error, 1)
	o.queue = append(o.queue, entry{done: done}) // an empty message, written last
	o.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// drain writes the waiting messages in order, then stops writing. Only the
// one writing calls it.
func (o *Outbox) drain() {
	for {
		o.mu.Lock()
		if len(o.queue) == 0 {
			o.writing = false
			o.queue = nil // a burst's backlog is not kept
			o.mu.Unlock()
			return
		}
		e := o.queue[0]
		o.queue[0] = entry{}
		o.queue = o.queue[1:]
		o.mu.Unlock()
		var err error
		if len(e.parts) > 0 {
			err = o.write(e.parts)
		}
		if e.done != nil {
			e.done <- err
		}
	}
}

// abandon stops writing with messages left unwritten: their senders learn
// why.
func (o *Outbox) abandon() {
	o.mu.Lock()
	q := o.queue
	o.queue = nil
	o.writing = false
	o.mu.Unlock()
	for _, e := range q {
		if e.done != nil {
			e.done <- ErrEnded
		}
	}
}
