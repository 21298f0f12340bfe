package protocol

import "encoding/json"

// A RequestWatcher learns that a request's context ended before the
// request was answered: the peer cancelled it ($/cancelRequest) or Serve's
// context ended. It is what context.AfterFunc on the request's context
// would do, without the five allocations and the parent's lock that
// AfterFunc costs each request (the sidecar watches every tools/call sent
// from the read loop).
type RequestWatcher interface {
	// RequestEnded is called once, on a goroutine of its own, with the
	// cause of the request's context (context.Cause), which has ended.
	RequestEnded(cause error)
}

// Watch has w told when the context of the request id ends before the
// request is answered (Reply or ReplyError take the watch away). It
// reports false, and w is never told, when the request is not in flight
// or its context has ended already: the caller then acts at once.
func (c *Conn) Watch(id json.RawMessage, w RequestWatcher) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended != nil {
		return false
	}
	ids, key, ok := c.idSlot(id)
	if !ok {
		return false
	}
	req, ok := ids[string(key)]
	if !ok || req.watcher != nil {
		return false
	}
	req.watcher = w
	ids[string(key)] = req
	return true
}

// tell tells each watcher of a request whose context ended, each on a
// goroutine of its own, as context.AfterFunc would.
func tell(watchers []RequestWatcher, cause error) {
	for _, w := range watchers {
		go w.RequestEnded(cause)
	}
}
