package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/internal/ctxsleep"
	"github.com/mcp-sidecar/mcp-sidecar/internal/jsonscan"
	"github.com/mcp-sidecar/mcp-sidecar/internal/peerlog"
)

// Subscriptions. A legacy server takes resources/subscribe and sends what
// the client may want on its stdout or its HTTP session's GET stream. A
// modern one (MCP 2026-07-28,
// modelcontextprotocol.io/specification/2026-07-28/basic/patterns/subscriptions)
// sends only what a subscriptions/listen request asked for, on that
// request's stream: the connection keeps one such stream, asking for the
// list_changed notifications the handlers want (where the server declares
// listChanged) and the updates of the resources subscribed; Subscribe and
// Unsubscribe replace it. The caller sees the same Subscribe, Unsubscribe
// and handlers whatever the server speaks.

// Subscribe subscribes to updates of the resource uri.
func (c *Conn) Subscribe(ctx context.Context, uri string) error {
	if c.era == EraModern {
		return c.subs.Load().subscribe(ctx, uri)
	}
	_, err := c.call(ctx, "resources/subscribe", uriParams(uri))
	return err
}

// ListenRefused is a modern server's refusal of the connection's
// subscriptions/listen stream (a *ServerError): list_changed
// notifications and resource updates do not come from it until a stream
// is accepted (Subscribe asks again). Nil when the stream works, is not
// needed, or the server is legacy.
func (c *Conn) ListenRefused() error {
	l := c.subs.Load()
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.refused
}

// Unsubscribe ends the subscription to uri.
func (c *Conn) Unsubscribe(ctx context.Context, uri string) error {
	if c.era == EraModern {
		return c.subs.Load().unsubscribe(ctx, uri)
	}
	_, err := c.call(ctx, "resources/unsubscribe", uriParams(uri))
	return err
}

func uriParams(uri string) json.RawMessage {
	return append(append([]byte(`{"uri":`), jsonString(uri)...), '}')
}

// Bounds of the reopening of a listen stream that ended without being
// asked to.
const (
	listenFirstDelay = time.Second
	listenMaxDelay   = 30 * time.Second
)

// listener is a modern connection's subscriptions/listen stream.
type listener struct {
	c *Conn
	// What the stream asks for besides resources: fixed for the
	// connection.
	tools, prompts, resources bool
	canSubscribe              bool // capabilities.resources.subscribe

	changeMu sync.Mutex // one replacement at a time

	mu     sync.Mutex
	uris   map[string]bool
	cur    *stream // the stream in use; nil when there is nothing to ask for
	closed bool
	delay  time.Duration // before the next reopening
	// refused is the server's refusal of the last stream (a JSON-RPC
	// error), until a stream is acknowledged.
	refused error
}

// stream is one subscriptions/listen request.
type stream struct {
	l      *listener
	id     int64
	uris   []string
	ctx    context.Context
	stop   context.CancelFunc
	acked  chan struct{} // closed at the acknowledgment
	agreed []string      // the resources the acknowledgment names
	ended  chan struct{} // closed when the request ended (answer, error)
	err    error         // why it ended, set before ended is closed
}

// newListener sets up the listener of a modern connection and opens its
// stream when there is anything to ask for: the list_changed handlers
// given, and the resources of Options.Subscriptions.
func (c *Conn) newListener() {
	var caps struct {
		Tools     struct{ ListChanged bool } `json:"tools"`
		Prompts   struct{ ListChanged bool } `json:"prompts"`
		Resources struct {
			ListChanged bool `json:"listChanged"`
			Subscribe   bool `json:"subscribe"`
		} `json:"resources"`
	}
	_ = json.Unmarshal(c.caps, &caps)
	h := c.opts.Handlers
	l := &listener{
		c:            c,
		tools:        caps.Tools.ListChanged && h.ToolListChanged != nil,
		prompts:      caps.Prompts.ListChanged && h.PromptListChanged != nil,
		resources:    caps.Resources.ListChanged && h.ResourceListChanged != nil,
		canSubscribe: caps.Resources.Subscribe,
		uris:         map[string]bool{},
		delay:        listenFirstDelay,
	}
	if c.opts.Subscriptions != nil && l.canSubscribe {
		for _, uri := range c.opts.Subscriptions() {
			l.uris[uri] = true
		}
	}
	c.subs.Store(l)
	l.replace()
}

// params are the params of a listen request for uris.
func (l *listener) params(uris []string) json.RawMessage {
	n := map[string]any{}
	if l.tools {
		n["toolsListChanged"] = true
	}
	if l.prompts {
		n["promptsListChanged"] = true
	}
	if l.resources {
		n["resourcesListChanged"] = true
	}
	if len(uris) > 0 {
		n["resourceSubscriptions"] = uris
	}
	b, _ := marshalNoEscape(map[string]any{"notifications": n})
	return l.c.withMeta(b)
}

// replace ends the stream in use and opens one for what the listener asks
// for now. It returns the new stream, nil when there is nothing to ask
// for.
//
// On stdio the old stream is over before the new one is asked for: go-sdk
// v1.8 servers keep one registration per connection and kind of
// notification (and per resource), which the end of any listen request
// drops when its handler returns, whenever that is: a new stream asked for
// before it would be left with nothing. Such a server answers the
// cancelled request once its handler returned, which is waited for (a
// server that follows MCP and answers nothing is waited for at most
// cancelEcho). A notification that falls between the two streams is lost.
func (l *listener) replace() *stream {
	l.changeMu.Lock()
	defer l.changeMu.Unlock()
	l.mu.Lock()
	old := l.cur
	l.cur = nil
	l.mu.Unlock()
	if old != nil {
		old.end()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	uris := slices.Sorted(maps.Keys(l.uris))
	if !l.closed && (l.tools || l.prompts || l.resources || len(uris) > 0) {
		l.cur = l.open(uris)
	}
	return l.cur
}

// cancelEcho bounds the wait for the answer to a cancelled listen request
// (see replace).
const cancelEcho = time.Second

// open sends a listen request for uris. Its answer (the server's graceful
// end, an error, the transport's end) reopens it, unless it was replaced.
func (l *listener) open(uris []string) *stream {
	c := l.c
	ctx, stop := context.WithCancel(c.life)
	// The id is the stream's subscriptionId: known before the request
	// goes, so that no notification of the stream is taken for another's.
	s := &stream{l: l, id: c.w.newID(), uris: uris, ctx: ctx, stop: stop, acked: make(chan struct{}), ended: make(chan struct{})}
	params := l.params(uris)
	// Over HTTP the request's POST lives as long as the stream, and its
	// write waits for the server's first answer: not on the caller's path.
	if !c.w.goBG(func() {
		if err := c.w.sendAs(ctx, s.id, "subscriptions/listen", params, s); err != nil {
			s.CallEnded(nil, err)
		}
	}) {
		stop()
	}
	return s
}

// CallEnded is the end of the listen request: the server closed the
// stream (an answer, or an error), or the transport did.
func (s *stream) CallEnded(_ json.RawMessage, err error) {
	l := s.l
	l.mu.Lock()
	if s.err == nil {
		s.err = err
		if err == nil {
			s.err = errors.New("the server ended the stream")
		}
		close(s.ended)
	}
	current := l.cur == s && !l.closed
	var se *ServerError
	refused := current && s.ctx.Err() == nil && errors.As(err, &se)
	if refused {
		l.refused = err
	}
	l.mu.Unlock()
	if !current || s.ctx.Err() != nil {
		return
	}
	if refused {
		// The server refuses to listen: asking again at once would not
		// change it (a later Subscribe asks again).
		l.c.opts.Logger.Warn("the server refused subscriptions/listen: no list_changed or resource updates from it", "server", l.c.name, peerlog.Err("err", err))
		return
	}
	l.reopenLater()
}

// reopenLater opens the stream again after a pause that grows.
func (l *listener) reopenLater() {
	c := l.c
	l.mu.Lock()
	d := l.delay
	l.delay = min(2*l.delay, listenMaxDelay)
	l.mu.Unlock()
	c.w.goBG(func() {
		if ctxsleep.Sleep(c.life, d) != nil {
			return
		}
		l.mu.Lock()
		cur := l.cur
		l.mu.Unlock()
		if cur == nil {
			return
		}
		select {
		case <-cur.ended:
			l.replace()
		default: // replaced meanwhile by a working one
		}
	})
}

// end takes the stream back: its POST is closed (HTTP), or the server is
// told, and its answer waited for (stdio: see replace).
func (s *stream) end() {
	w := s.l.c.w
	defer s.stop()
	if s.l.c.proc == nil {
		w.forget(s.id)
		return
	}
	select {
	case <-s.ended:
		return
	default:
	}
	w.cancel(s.id, errors.New("subscriptions changed"))
	t := time.NewTimer(cancelEcho)
	defer t.Stop()
	select {
	case <-s.ended:
	case <-t.C:
	case <-s.l.c.life.Done():
	}
	w.forget(s.id)
}

// waitAck waits for the stream's acknowledgment (bounded by ctx) and
// reports the resources it agreed to send updates of.
func (s *stream) waitAck(ctx context.Context) ([]string, error) {
	select {
	case <-s.acked:
		s.l.mu.Lock()
		defer s.l.mu.Unlock()
		return s.agreed, nil
	case <-s.ended:
		return nil, s.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// current reports whether a notification (its params) belongs to the
// stream in use, or to none: the notifications of a stream replaced are
// dropped.
func (l *listener) current(params json.RawMessage) bool {
	id, ok := subscriptionID(params)
	if !ok {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cur != nil && l.cur.id == id
}

// subscriptionID reads _meta's io.modelcontextprotocol/subscriptionId.
func subscriptionID(params json.RawMessage) (int64, bool) {
	meta := jsonscan.Member(params, "_meta")
	if meta == nil {
		return 0, false
	}
	id := jsonscan.Member(meta, protocolMetaPrefix+"subscriptionId")
	if id == nil {
		return 0, false
	}
	return parseID(id)
}

// acknowledged takes a stream's acknowledgment.
func (l *listener) acknowledged(params json.RawMessage) {
	id, ok := subscriptionID(params)
	var p struct {
		Notifications struct {
			ResourceSubscriptions []string `json:"resourceSubscriptions"`
		} `json:"notifications"`
	}
	_ = json.Unmarshal(params, &p)
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.cur
	if s == nil || (ok && s.id != id) {
		return
	}
	select {
	case <-s.acked:
		return
	default:
	}
	s.agreed = p.Notifications.ResourceSubscriptions
	l.delay = listenFirstDelay // it works: the next break starts the pause over
	l.refused = nil
	close(s.acked)
}

// ended takes the server's notifications/cancelled of a listen request: it
// tore the stream down.
func (l *listener) ended(id int64) {
	l.mu.Lock()
	s := l.cur
	l.mu.Unlock()
	if s == nil || s.id != id || !l.c.w.forget(id) {
		return
	}
	s.CallEnded(nil, errors.New("the server cancelled the stream"))
}

// subscribe adds uri to the stream, and waits for the server's
// acknowledgment that it sends its updates.
func (l *listener) subscribe(ctx context.Context, uri string) error {
	c := l.c
	if !l.canSubscribe {
		return &ServerError{Server: c.name, Method: "subscriptions/listen", Code: -32601,
			Message: "the server offers no resource subscriptions (its capabilities have no resources.subscribe)"}
	}
	l.mu.Lock()
	if s := l.cur; l.uris[uri] && s != nil && !s.over() {
		// Asked for by the stream in use: its acknowledgment says whether
		// the server agreed. A stream that ended (the server refused it)
		// or that did not agree is asked for again below.
		l.mu.Unlock()
		agreed, err := s.waitAck(ctx)
		if err == nil && slices.Contains(agreed, uri) {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("server %q: subscriptions/listen: %w", c.name, ctx.Err())
		}
		l.mu.Lock()
	}
	l.uris[uri] = true
	l.mu.Unlock()
	s := l.replace()
	if s == nil {
		return fmt.Errorf("server %q: subscriptions/listen: %w", c.name, ErrConnectionLost)
	}
	agreed, err := s.waitAck(ctx)
	if err != nil {
		err = fmt.Errorf("server %q: subscriptions/listen: %w", c.name, err)
	} else if !slices.Contains(agreed, uri) {
		err = &ServerError{Server: c.name, Method: "subscriptions/listen", Code: -32602,
			Message: fmt.Sprintf("the server did not agree to send updates of %q", uri)}
	}
	if err != nil {
		// Not subscribed: the resource is not asked for by the streams
		// that replace this one, and a later Subscribe asks again.
		l.mu.Lock()
		delete(l.uris, uri)
		l.mu.Unlock()
	}
	return err
}

// over reports whether the stream's request ended.
func (s *stream) over() bool {
	select {
	case <-s.ended:
		return true
	default:
		return false
	}
}

// unsubscribe drops uri from the stream.
func (l *listener) unsubscribe(_ context.Context, uri string) error {
	l.mu.Lock()
	had := l.uris[uri]
	delete(l.uris, uri)
	l.mu.Unlock()
	if had {
		l.replace()
	}
	return nil
}

// shut ends the stream for good (the connection's end).
func (l *listener) shut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	if l.cur != nil {
		l.cur.stop()
	}
}
