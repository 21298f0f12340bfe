package protocol

import (
	"bytes"
	"encoding/json"
	"slices"
	"sync"
	"sync/atomic"
)

// While the peer does not read what is written to it (the outbox is over
// its limit, or maxOwed answers are owed), its new requests wait to be
// handed to the Handler, and the read loop reads on: a response to one of
// the Conn's calls and $/cancelRequest are taken at once. A peer that
// waits for an answer before it reads again (it answers an elicitation
// the answer depends on, or cancels the request) is then not deadlocked
// by the pause, nor is one that blocks writing while its input is not
// read. The peer's other notifications wait behind the requests read
// before them, so that the Handler sees every message in read order. At
// most maxHeld messages (or maxHeldBytes of params) wait; past either,
// the read loop stops reading until they are handed on, which bounds
// what a peer that writes and never reads costs.
const (
	maxHeld      = 256
	maxHeldBytes = 16 << 20
)

// holdQueue is the messages that wait for the peer to read.
type holdQueue struct {
	// active is set while messages wait or are being handed on: the read
	// loop then hands the Handler nothing itself.
	active  atomic.Bool
	mu      sync.Mutex
	msgs    []*Request
	size    int           // the params bytes of msgs
	drained chan struct{} // closed when the queue is handed on whole
}

// deliver hands req, a request or notification read, on: to the Handler
// at once, or to the queue while the peer does not read. A $/cancelRequest
// cancels at once, a waiting request included.
func (c *Conn) deliver(req *Request) {
	if req.IsNotification() && req.Method == MethodCancelRequest {
		c.cancelRequest(req.Params)
	}
	if !c.hold.active.Load() && (req.IsNotification() || !c.peerBehind()) {
		c.dispatch(req)
		return
	}
	c.hold.mu.Lock()
	c.hold.msgs = append(c.hold.msgs, req)
	c.hold.size += len(req.Params)
	start := !c.hold.active.Load()
	if start {
		c.hold.active.Store(true)
		c.hold.drained = make(chan struct{})
	}
	c.hold.mu.Unlock()
	if start {
		frames, size := c.out.out.Pending()
		c.log.Warn("the peer does not read what is written to it: its new requests wait until it does (its responses and cancellations are read on)",
			"waiting_frames", frames, "waiting_bytes", size, "limit_frames", maxQueuedFrames, "limit_bytes", maxQueuedBytes, "owed", c.owedNow(), "limit_owed", maxOwed)
		go c.handOn()
	}
}

// peerBehind reports whether the peer is behind in reading: the outbox
// is full, or maxOwed answers are owed.
func (c *Conn) peerBehind() bool {
	return c.out.room() != nil || c.readAhead() != nil
}

// owedNow is the number of answers owed.
func (c *Conn) owedNow() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.owed
}

// handOn hands the waiting messages to the Handler in order, each once the
// peer has caught up (the outbox back at half, the answers owed at half),
// and ends when none waits or the Conn closes (the rest is dropped, as
// what is read after Close is).
func (c *Conn) handOn() {
	for {
		if !c.waitPeer() {
			return
		}
		c.hold.mu.Lock()
		if len(c.hold.msgs) == 0 {
			c.hold.active.Store(false)
			close(c.hold.drained)
			c.hold.drained = nil
			c.hold.msgs = nil
			c.hold.mu.Unlock()
			c.log.Info("the peer reads again: its requests are handled")
			return
		}
		req := c.hold.msgs[0]
		c.hold.msgs[0] = nil
		c.hold.msgs = c.hold.msgs[1:]
		c.hold.size -= len(req.Params)
		c.hold.mu.Unlock()
		c.dispatch(req)
	}
}

// waitPeer waits while the peer is behind in reading; false if the Conn
// closed meanwhile.
func (c *Conn) waitPeer() bool {
	for {
		if room := c.out.room(); room != nil {
			select {
			case <-room:
				continue
			case <-c.closing:
				return false
			}
		}
		if fewer := c.readAhead(); fewer != nil {
			select {
			case <-fewer:
				continue
			case <-c.closing:
				return false
			}
		}
		return true
	}
}

// waitHeld holds the read loop while the queue is full, until it is
// handed on whole (or the Conn closes).
func (c *Conn) waitHeld() {
	if !c.hold.active.Load() {
		return
	}
	c.hold.mu.Lock()
	n, full, drained := len(c.hold.msgs), len(c.hold.msgs) >= maxHeld || c.hold.size >= maxHeldBytes, c.hold.drained
	c.hold.mu.Unlock()
	if !full || drained == nil {
		return
	}
	c.log.Warn("requests wait for the peer to read: reading its input paused until they are handled", "waiting_requests", n, "limit_requests", maxHeld, "limit_bytes", maxHeldBytes)
	select {
	case <-drained:
	case <-c.closing:
	}
}

// cancelHeld takes the waiting request whose id is id out of the queue
// and answers it -32800; false when no request with that id waits.
func (c *Conn) cancelHeld(id json.RawMessage) bool {
	if !c.hold.active.Load() {
		return false
	}
	key, ok := idKey(id)
	if !ok {
		return false
	}
	c.hold.mu.Lock()
	var req *Request
	for i, m := range c.hold.msgs {
		if m.IsNotification() || slices.Contains(c.uncancellable, m.Method) {
			continue
		}
		if k, ok := idKey(m.ID); ok && k == key {
			req = m
			c.hold.msgs = append(c.hold.msgs[:i], c.hold.msgs[i+1:]...)
			c.hold.size -= len(m.Params)
			break
		}
	}
	c.hold.mu.Unlock()
	if req == nil {
		return false
	}
	if err := c.writeError(req.ID, NewError(CodeRequestCancelled, KindCancelled, "request cancelled"), true); err != nil {
		c.log.Debug("cancellation not written", "err", err)
	}
	return true
}

// idKey is an id's identity, as idSlot keys it: "n" and a number's
// text, "s" and a string's value.
func idKey(raw []byte) (string, bool) {
	raw = bytes.Trim(raw, " \t\r\n")
	if !validIDText(raw) {
		return "", false
	}
	if raw[0] != '"' {
		return "n" + string(raw), true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return "s" + s, true
}
