// Package outbox keeps the messages of one writer in the order they were
// sent, for senders that wait until theirs is written, senders that only
// hand theirs over, and senders that must not wait at all (a read loop,
// which has to read on while the other end does not read). One sender
// writes at a time; what is sent meanwhile waits in the outbox, and
// whoever writes writes it before it stops. No goroutine waits per
// message: a message handed over is an entry in a queue.
//
// The outbox counts the messages that wait behind the one being written.
// Past its limit it is full (Room) until it is back at half of it, so that
// whoever produces the messages can stop producing (a read loop stops
// reading) without stopping and starting again at every message.
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

	// MaxCount and MaxBytes are the outbox's limit: with more messages,
	// or more bytes, waiting behind the one being written, the outbox is
	// full until both are back at half their limit. Zero: no limit of
	// that kind. Set before first use.
	MaxCount int
	MaxBytes int64

	mu      sync.Mutex
	writing bool // a sender or a drain goroutine writes
	queue   []entry
	count   int           // messages in the queue
	bytes   int64         // their size
	full    chan struct{} // while full: closed when the outbox is not any more
	idle    chan struct{} // while writing, if asked for: closed when writing stops

	queued func(waits bool) // tests: a message was queued (waits: its sender waits)
}

type entry struct {
	parts [][]byte
	n     int        // 1 for a message, 0 for Flush's mark
	size  int64      // its bytes
	done  chan error // the waiting sender's; nil when nobody waits
}

// New returns an outbox that writes each message, given in parts, with
// write.
func New(write func(parts [][]byte) error) *Outbox {
	return &Outbox{write: write}
}

// size is the length of a message given in parts.
func size(parts [][]byte) int64 {
	var n int64
	for _, p := range parts {
		n += int64(len(p))
	}
	return n
}

// add counts a message queued; o.mu is held.
func (o *Outbox) add(n int, size int64) {
	o.count += n
	o.bytes += size
	if o.full == nil && ((o.MaxCount > 0 && o.count > o.MaxCount) || (o.MaxBytes > 0 && o.bytes > o.MaxBytes)) {
		o.full = make(chan struct{})
	}
}

// sub counts a message taken off the queue; o.mu is held.
func (o *Outbox) sub(n int, size int64) {
	o.count -= n
	o.bytes -= size
	if o.full != nil && (o.MaxCount == 0 || o.count <= o.MaxCount/2) && (o.MaxBytes == 0 || o.bytes <= o.MaxBytes/2) {
		close(o.full)
		o.full = nil
	}
}

// Room returns nil while the outbox is not full, else a channel that is
// closed once it is back at half its limit.
func (o *Outbox) Room() <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.full == nil {
		return nil
	}
	return o.full
}

// Idle returns nil when nobody is writing, else a channel that is closed
// once the writer has written everything and stopped.
func (o *Outbox) Idle() <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.writing {
		return nil
	}
	if o.idle == nil {
		o.idle = make(chan struct{})
	}
	return o.idle
}

// stop ends a writer's turn; o.mu is held.
func (o *Outbox) stop() {
	o.writing = false
	if o.idle != nil {
		close(o.idle)
		o.idle = nil
	}
}

// Pending reports how many messages, of how many bytes, wait behind the
// one being written.
func (o *Outbox) Pending() (count int, bytes int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.count, o.bytes
}

// Send writes a message after the messages sent before it and returns
// once it is written, with write's error.
func (o *Outbox) Send(parts ...[]byte) error {
	o.mu.Lock()
	if o.writing {
		n := size(parts)
		o.add(1, n)
		done := make(chan error, 1)
		o.queue = append(o.queue, entry{parts, 1, n, done})
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

// Post hands a message over to be written after the messages sent before
// it, without waiting for them: when nobody is writing, the caller writes
// it (and what is sent meanwhile) and returns write's error; otherwise it
// is queued and Post returns at once with queued true. A queued message
// is keep(parts) when keep is not nil: a copy of what the caller reuses
// once Post returned. The outbox's limit does not hold Post up: the
// caller's producer is the one to wait for Room.
func (o *Outbox) Post(parts [][]byte, keep func([][]byte) [][]byte) (queued bool, err error) {
	o.mu.Lock()
	if o.writing && keep != nil {
		o.mu.Unlock() // a copy may be large: others send meanwhile
		parts = keep(parts)
		o.mu.Lock()
	}
	if o.writing {
		n := size(parts)
		o.add(1, n)
		o.queue = append(o.queue, entry{parts: parts, n: 1, size: n})
		o.mu.Unlock()
		if o.queued != nil {
			o.queued(false)
		}
		return true, nil
	}
	o.writing = true
	o.mu.Unlock()
	err = o.write(parts)
	o.drain()
	return false, err
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
	if o.writing {
		n := size(parts)
		o.add(1, n)
		o.queue = append(o.queue, entry{parts: parts, n: 1, size: n})
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
		o.stop()
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
// failed), for at most d, and reports whether they were.
func (o *Outbox) Flush(d time.Duration) bool {
	o.mu.Lock()
	if !o.writing {
		o.mu.Unlock()
		return true
	}
	done := make(chan error, 1)
	o.queue = append(o.queue, entry{done: done}) // an empty message, written last
	o.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// drain writes the waiting messages in order, then stops writing. Only the
// one writing calls it.
func (o *Outbox) drain() {
	for {
		o.mu.Lock()
		if len(o.queue) == 0 {
			o.stop()
			o.queue = nil // a burst's backlog is not kept
			o.mu.Unlock()
			return
		}
		e := o.queue[0]
		o.queue[0] = entry{}
		o.queue = o.queue[1:]
		o.sub(e.n, e.size)
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
	for _, e := range q {
		o.sub(e.n, e.size)
	}
	o.stop()
	o.mu.Unlock()
	for _, e := range q {
		if e.done != nil {
			e.done <- ErrEnded
		}
	}
}
