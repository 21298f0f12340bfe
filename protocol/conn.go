package protocol

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/mcp-sidecar/mcp-sidecar/internal/peerlog"
)

// Request is a request or a notification from the peer.
type Request struct {
	// ID is the id exactly as the peer wrote it (the JSON text of a string
	// or number: -4, 1.5 and 123456789012345678901234567890 stay what they
	// are); nil for a notification. Answer with it as it is.
	ID     json.RawMessage
	Method string
	// Params is the params member byte for byte as the peer sent it (nil
	// when absent): key order, number spellings and escapes survive.
	Params json.RawMessage
}

// IsNotification reports whether the peer expects no answer.
func (r *Request) IsNotification() bool { return r.ID == nil }

// A Handler takes the peer's requests and notifications. Conn calls it on
// its read loop, one message at a time in the order they were read, so it
// must not block: a request's work belongs on a goroutine of its own, which
// answers with Reply or ReplyError. An answer given within Handle (an
// error found at once) is written without waiting for the peer to read
// it, so that the read loop reads on; a Notify or a call from Handle may
// wait (see Notify).
// For a request, ctx is the request's own context: it ends when the peer
// cancels the request ($/cancelRequest, cause ErrRequestCancelled) or
// Serve's context ends.
type Handler interface {
	Handle(ctx context.Context, req *Request)
}

// HandlerFunc is a Handler as a function.
type HandlerFunc func(ctx context.Context, req *Request)

func (f HandlerFunc) Handle(ctx context.Context, req *Request) { f(ctx, req) }

// ConnOptions configure a Conn.
type ConnOptions struct {
	// MaxFrameBytes is the largest body accepted; a larger frame is skipped
	// without being buffered and answered with an error. Zero or negative
	// means DefaultMaxFrameBytes.
	MaxFrameBytes int64
	// Logger receives a record for every message the connection drops or
	// answers itself. The peer's bytes in a record are cut short, and the
	// records that carry them rate-limited (internal/peerlog): a Logger
	// whose handler is a peerlog.Handler is used as it is, any other gets
	// one in front. Nil discards them.
	Logger *slog.Logger
	// Uncancellable names the methods whose requests $/cancelRequest does
	// not cancel: the cancel is ignored and the request answered as usual
	// (LSP lets a server decline a cancellation).
	Uncancellable []string
	// FrameSize, when set, is told the size in bytes of every frame read,
	// of every frame written (once as it is handed to be written, once
	// when it was), and of every raw result given to Reply: the program
	// returns a large payload's memory to the OS on it (the sidecar's
	// internal/memrelease), having seen its end. It is called from the
	// read loop and the writers, and must return at once.
	FrameSize func(n int)
}

// ErrClosed is returned by calls that were waiting when the connection
// closed.
var ErrClosed = errors.New("connection closed")

// ErrNotInFlight is returned by Reply and ReplyError for a request that is
// not (or no longer) in flight: it was answered already, -32800 included.
var ErrNotInFlight = errors.New("no request in flight with this id")

// ErrRequestCancelled is the cause of a request's context when the peer
// cancelled it with $/cancelRequest.
var ErrRequestCancelled = errors.New("request cancelled by the peer")

// Conn is one end of a JSON-RPC 2.0 connection with the Language Server
// base protocol's framing (Content-Length headers): the host's wire. It is
// the one owner of that wire: it reads every message, answers what is
// malformed, keeps the requests in flight, and writes every outgoing frame.
//
// What it answers itself, reading on:
//
//   - a bad header block: -32700 with id null, then a resynchronisation on
//     the next "Content-Length:" (see frameReader);
//   - a body over MaxFrameBytes: skipped in bounded memory, then -32700 whose
//     message names the limit, with the id when it appears in the first 4 KiB;
//   - a body that is not valid JSON (including an empty one): -32700, with
//     the id when a top-level "id" can be read before the syntax error;
//   - a JSON array (batch, empty or not): -32600 with id null; LSP has no
//     batches;
//   - a JSON value other than an object or array: -32600 with id null;
//   - an object that is neither a request nor a response (no "method", no
//     "result", no non-null "error", or both kinds at once), a request whose
//     "method" is not a string, or whose id is not a string, number or null:
//     -32600 with the id where it is a string or number, else null;
//   - a request whose id is already in flight: -32600 with that id;
//   - $/cancelRequest {id}: the request's context is cancelled and it is
//     answered -32800 at once (vscode-jsonrpc waits for that answer); the
//     handler's own answer, when it comes, is dropped. This happens in read
//     order, so a cancel never overtakes the request it names. An id not in
//     flight, or of a request ConnOptions.Uncancellable names, is ignored.
//     The notification is then handed to the Handler like any other.
//
// Responses from the peer are never answered (that could ping-pong): one
// whose id is not of a call of this Conn is dropped and logged; a malformed
// one whose id is ends that call with an error. Error replies carry data
// {"kind": "parse_error" | "invalid_request", "retryable": false}. A request
// whose id is null or absent is a notification. The "jsonrpc" member is not
// checked.
type Conn struct {
	in            *frameReader
	out           *frameWriter
	log           *slog.Logger
	uncancellable []string

	rc, wc    any // the reader and writer as given, closed by Close where they are io.Closers
	closeIO   sync.Once
	closeErr  error
	closing   chan struct{} // closed by Close
	closeOnce sync.Once

	// Set once by Serve, before started is closed. base is ctx without its
	// cancellation: a request's context derives from it, so that the two
	// read loops do not register every request with ctx (and contend for
	// its lock); when ctx ends, Serve cancels the requests in flight.
	handler Handler
	ctx     context.Context
	base    context.Context
	started chan struct{}
	serving atomic.Bool

	mu sync.Mutex
	// The requests in flight: numIDs and strIDs, by the key idSlot gives.
	numIDs, strIDs map[string]inflight
	ended          error // Serve's context ended, with this cause
	// owed counts the requests read whose answer is not yet handed to
	// the writer; fewer, when asked for, is closed once at most
	// maxOwed/2 are.
	owed  int
	fewer chan struct{}

	// handing is the request being handed to the handler, on the read
	// loop: an answer to it while Handle runs is written later (see
	// frameWriter), so that the read loop never waits for the peer.
	handing atomic.Pointer[Request]

	calls   *jsonrpc2.Conn // pending calls; see calls.go
	callSeq atomic.Uint64
	readErr atomic.Pointer[error]

	frameSize func(n int) // ConnOptions.FrameSize, or one that does nothing

	hold holdQueue // what waits for the peer to read (hold.go)
}

// inflight is a request read and not yet answered.
type inflight struct {
	id            json.RawMessage
	cancel        context.CancelCauseFunc
	uncancellable bool           // $/cancelRequest leaves it alone
	watcher       RequestWatcher // told when cancel is called with a cause (conn_watch.go)
}

// NewConn returns a connection reading the peer's frames from r and writing
// frames to w. Close closes r and w where they are io.Closers (once if they
// are the same value). Nothing is read before Serve; calls may be sent
// before (their answers are read once Serve runs).
func NewConn(r io.Reader, w io.Writer, opts ConnOptions) *Conn {
	c := &Conn{
		in:      newFrameReader(r, opts.MaxFrameBytes),
		out:     newFrameWriter(w),
		log:     opts.Logger,
		rc:      r,
		wc:      w,
		closing: make(chan struct{}),
		started: make(chan struct{}),
		numIDs:  make(map[string]inflight),
		strIDs:  make(map[string]inflight),

		uncancellable: opts.Uncancellable,
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	c.log = peerlog.Limit(c.log)
	c.frameSize = opts.FrameSize
	if c.frameSize == nil {
		c.frameSize = func(int) {}
	}
	c.out.sized = c.frameSize
	c.calls = newCalls(c)
	return c
}

// SetMaxFrameBytes sets the largest body accepted from the next frame on
// (a frame whose header was read already keeps the limit it was read
// with). Zero or negative means DefaultMaxFrameBytes.
func (c *Conn) SetMaxFrameBytes(n int64) {
	if n <= 0 {
		n = DefaultMaxFrameBytes
	}
	c.in.max.Store(n)
}

// Serve reads the peer's messages and hands them to h until the peer's
// input ends, the connection is closed, or ctx ends (which closes it). It
// returns nil when the input ended between two frames or Close ended it,
// else the error that ended reading. Every request's context derives from
// ctx. The answers the read loop itself gave ($/cancelRequest's -32800,
// malformed messages) are written before Serve returns, unless the peer
// takes none of them for flushWait. Replies may still be written after
// Serve returned, until the writer fails.
func (c *Conn) Serve(ctx context.Context, h Handler) error {
	if !c.serving.CompareAndSwap(false, true) {
		return errors.New("protocol: Serve called twice")
	}
	c.handler, c.ctx, c.base = h, ctx, context.WithoutCancel(ctx)
	stop := context.AfterFunc(ctx, func() {
		c.cancelInflight(context.Cause(ctx))
		c.Close()
	})
	defer stop()
	close(c.started)
	<-c.calls.DisconnectNotify()
	if err := c.readErr.Load(); err != nil {
		return *err
	}
	return nil
}

// Done is closed when the connection ends: the peer's input ended, or
// Close was called.
func (c *Conn) Done() <-chan struct{} { return c.calls.DisconnectNotify() }

// Close closes the connection: calls waiting for an answer fail with
// ErrClosed, the reader and writer are closed where they are io.Closers,
// and no more messages reach the Handler. A reader that cannot be closed
// is drained to its end, its messages dropped, so that a peer still
// writing to it is not blocked (an in-process sidecar over io.Pipe ends
// its sessions with notifications). Replies to requests in flight are
// still written if the writer takes them (the sidecar's stdout outlives
// its stdin).
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closing)
	})
	if err := c.calls.Close(); err != nil && !errors.Is(err, jsonrpc2.ErrClosed) {
		return err
	}
	return c.closeReaderWriter() // closed already by jsonrpc2: its result
}

// closeReaderWriter closes the reader and the writer given to NewConn
// where they are io.Closers (once if they are the same value).
func (c *Conn) closeReaderWriter() error {
	c.closeIO.Do(func() {
		var errs []error
		if cl, ok := c.rc.(io.Closer); ok {
			errs = append(errs, cl.Close())
		}
		if cl, ok := c.wc.(io.Closer); ok && !sameValue(c.rc, c.wc) {
			errs = append(errs, cl.Close())
		}
		c.closeErr = errors.Join(errs...)
	})
	return c.closeErr
}

// sameValue is a == b without the panic on uncomparable dynamic types.
func sameValue(a, b any) bool {
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	return ta == tb && ta != nil && ta.Comparable() && a == b
}

// dispatch hands a well-formed request or notification to the handler, on
// the read loop.
func (c *Conn) dispatch(req *Request) {
	select {
	case <-c.closing:
		return // drained after Close (see Close)
	default:
	}
	if req.IsNotification() {
		c.handler.Handle(c.ctx, req) // a $/cancelRequest has cancelled (deliver)
		return
	}
	ctx, cancel := context.WithCancelCause(c.base)
	c.mu.Lock()
	if c.ended != nil {
		cancel(c.ended) // Serve's context ended while this was read
	}
	ids, key, _ := c.idSlot(req.ID) // the reader let only strings and numbers through
	if _, dup := ids[string(key)]; dup {
		c.mu.Unlock()
		cancel(nil)
		c.answer(req.ID, CodeInvalidRequest, KindInvalidRequest, fmt.Sprintf("request id %s is already in flight", req.ID))
		return
	}
	ids[string(key)] = inflight{id: req.ID, cancel: cancel, uncancellable: slices.Contains(c.uncancellable, req.Method)}
	c.owed++
	c.mu.Unlock()
	c.handing.Store(req)
	c.handler.Handle(ctx, req)
	c.handing.Store(nil)
}

// answering reports whether id is the request being handed to the
// handler, which an answer then must not wait for the peer.
func (c *Conn) answering(id json.RawMessage) bool {
	r := c.handing.Load()
	return r != nil && bytes.Equal(r.ID, id)
}

// cancelRequest cancels the request $/cancelRequest names and answers it
// -32800. An id not in flight is ignored.
func (c *Conn) cancelRequest(params json.RawMessage) {
	var p CancelParams
	if err := json.Unmarshal(params, &p); err != nil || len(p.ID) == 0 {
		c.log.Warn("malformed $/cancelRequest", peerlog.Bytes("params", params), peerlog.Err("err", err))
		return
	}
	c.mu.Lock()
	ids, key, ok := c.idSlot(p.ID)
	var req inflight
	if ok {
		req, ok = ids[string(key)]
	}
	if ok && !req.uncancellable {
		delete(ids, string(key))
	}
	c.mu.Unlock()
	if !ok && c.cancelHeld(p.ID) {
		return // it waited for the peer to read (hold.go)
	}
	if !ok || req.uncancellable {
		return // answered already, never existed, or not to be cancelled
	}
	req.cancel(ErrRequestCancelled)
	if req.watcher != nil {
		tell([]RequestWatcher{req.watcher}, ErrRequestCancelled)
	}
	defer c.answered()
	if err := c.writeError(req.id, NewError(CodeRequestCancelled, KindCancelled, "request cancelled"), true); err != nil {
		c.log.Debug("cancellation not written", peerlog.Bytes("id", req.id), "err", err)
	}
}

// cancelInflight cancels the context of every request in flight, and of
// those read from now on, with cause: Serve's context ended. They stay in
// flight: their handlers answer as they end.
func (c *Conn) cancelInflight(cause error) {
	c.mu.Lock()
	c.ended = cause
	var cancels []context.CancelCauseFunc
	var watchers []RequestWatcher
	for _, ids := range []map[string]inflight{c.numIDs, c.strIDs} {
		for k, r := range ids {
			cancels = append(cancels, r.cancel)
			if r.watcher != nil {
				watchers = append(watchers, r.watcher)
				r.watcher = nil // told once
				ids[k] = r
			}
		}
	}
	c.mu.Unlock()
	for _, cancel := range cancels {
		cancel(cause)
	}
	tell(watchers, cause)
}

// finish takes the request id out of flight; false if it was not in it.
func (c *Conn) finish(id json.RawMessage) bool {
	c.mu.Lock()
	ids, key, ok := c.idSlot(id)
	var req inflight
	if ok {
		req, ok = ids[string(key)]
		delete(ids, string(key))
	}
	c.mu.Unlock()
	if ok {
		req.cancel(nil)
	}
	return ok
}

// Reply answers the request id with result, encoded once. A json.RawMessage
// result is written as it is: it must be valid JSON (the sidecar passes
// bytes an MCP server sent); it is not kept once Reply returns. HTML
// characters are not escaped. A request answered already (cancelled by the
// peer) is not answered again: ErrNotInFlight.
//
// Reply never waits for the frames ahead of its answer: the answer is
// written at once when nothing else is being written (Reply returns the
// write's error), else queued (Reply returns nil). It does not wait for the
// outbox's room either: an answer to a request already read is owed, and
// the peer's new requests are what wait while it does not read (hold.go).
func (c *Conn) Reply(id json.RawMessage, result any) error {
	raw, isRaw := result.(json.RawMessage)
	if isRaw {
		c.frameSize(len(raw)) // whether it is written or dropped
	}
	if !c.finish(id) {
		return ErrNotInFlight
	}
	defer c.answered()
	// fill is called before write or writeLater returns, and the two are
	// called directly (not through a func variable), so that it needs no
	// allocation.
	fill := func(b *bytes.Buffer) error {
		b.WriteString(`{"jsonrpc":"2.0","id":`)
		b.Write(id)
		b.WriteString(`,"result":`)
		if err := encodeJSON(b, result); err != nil {
			return fmt.Errorf("encoding result: %w", err)
		}
		b.WriteByte('}')
		return nil
	}
	// Large raw results go out without a copy; small ones are cheaper to
	// copy than to write in three system calls.
	switch {
	case c.answering(id):
		return c.out.writeLater(fill)
	case isRaw && len(raw) > rawWriteThreshold:
		return c.writeRawResult(id, raw)
	}
	return c.out.write(fill)
}

// writeRawResult writes a response around raw: the envelope's head, raw,
// then the closing brace.
func (c *Conn) writeRawResult(id json.RawMessage, raw json.RawMessage) error {
	const pre, post = `{"jsonrpc":"2.0","id":`, `,"result":`
	head := make([]byte, 0, len(pre)+len(id)+len(post))
	head = append(head, pre...)
	head = append(head, id...)
	head = append(head, post...)
	return c.out.writeRaw(head, raw, []byte{'}'})
}

// ReplyError answers the request id with err: an *Error (found with
// errors.As) as it is, any other error as -32603 with its message.
func (c *Conn) ReplyError(id json.RawMessage, err error) error {
	if !c.finish(id) {
		return ErrNotInFlight
	}
	defer c.answered()
	return c.writeError(id, AsError(err), c.answering(id))
}

// writeError writes an error response to id (nil for null); later for
// one the read loop sends (see frameWriter).
func (c *Conn) writeError(id json.RawMessage, e *Error, later bool) error {
	if id == nil {
		id = json.RawMessage("null")
	}
	write := c.out.write
	if later {
		write = c.out.writeLater
	}
	return write(func(b *bytes.Buffer) error {
		b.WriteString(`{"jsonrpc":"2.0","id":`)
		b.Write(id)
		b.WriteString(`,"error":`)
		if err := encodeJSON(b, e.wire()); err != nil {
			return fmt.Errorf("encoding error: %w", err)
		}
		b.WriteByte('}')
		return nil
	})
}

// answer writes the error reply to a message the handler never sees. id is
// the JSON text of the id, nil for null.
func (c *Conn) answer(id json.RawMessage, code int64, kind, msg string) error {
	c.log.Warn("answering malformed message", "code", code, peerlog.String("reason", msg), peerlog.Bytes("id", id))
	return c.writeError(id, NewError(code, kind, msg), true) // on the read loop
}

// Notify sends a notification. params nil leaves the member out. While
// the peer does not read (the outbox is full: see frameWriter), Notify
// waits for room, so that a stream of notifications is held back rather
// than followed into unbounded memory; after Close it returns ErrClosed
// instead of waiting. It does not wait for the frames ahead of its own.
func (c *Conn) Notify(method string, params any) error {
	if err := c.waitRoom(); err != nil {
		return err
	}
	return c.out.write(func(b *bytes.Buffer) error {
		b.WriteString(`{"jsonrpc":"2.0","method":`)
		if err := encodeJSON(b, method); err != nil {
			return err
		}
		if params != nil {
			b.WriteString(`,"params":`)
			if err := encodeJSON(b, params); err != nil {
				return fmt.Errorf("encoding %s params: %w", method, err)
			}
		}
		b.WriteByte('}')
		return nil
	})
}

// waitRoom waits while the outbox is full: the peer does not read what
// was written to it. It returns ErrClosed if the connection is closed
// meanwhile.
func (c *Conn) waitRoom() error {
	room := c.out.room()
	if room == nil {
		return nil
	}
	select {
	case <-room:
		return nil
	case <-c.closing:
		return ErrClosed
	}
}

// maxOwed is how many requests the read loop reads ahead of their
// answers: with this many read and their answers not yet handed to the
// writer, it waits until half of them are. Every request read owes the
// peer an answer, which its handler makes some time after the read loop
// moved on; without this bound, a peer that writes faster than the
// handlers answer could have any number of requests read (each with a
// handler running) before their answers fill the outbox.
const maxOwed = 1024

// readAhead returns nil while fewer than maxOwed answers are owed, else a
// channel closed once at most half of them are.
func (c *Conn) readAhead() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.owed < maxOwed {
		return nil
	}
	if c.fewer == nil {
		c.fewer = make(chan struct{})
	}
	return c.fewer
}

// answered notes that a request's answer was handed to the writer.
func (c *Conn) answered() {
	c.mu.Lock()
	c.owed--
	if c.fewer != nil && c.owed <= maxOwed/2 {
		close(c.fewer)
		c.fewer = nil
	}
	c.mu.Unlock()
}

// Flush waits until the frames handed over so far are written (or a write
// failed), for at most d, and reports whether they were: Reply and Notify
// may return before their frame is out.
func (c *Conn) Flush(d time.Duration) bool { return c.out.flush(d) }

// encodeJSON appends v's encoding to b: a json.RawMessage as it is, any
// other value through encoding/json without HTML escaping.
func encodeJSON(b *bytes.Buffer, v any) error {
	if raw, ok := v.(json.RawMessage); ok {
		if len(raw) == 0 {
			raw = json.RawMessage("null")
		}
		b.Write(raw)
		return nil
	}
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	b.Truncate(b.Len() - 1) // Encode appends a newline
	return nil
}
