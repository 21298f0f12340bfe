package protocol

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"reflect"
	"strconv"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/mcp-sidecar/mcp-sidecar/internal/peerlog"
)

// The calls a Conn makes to its peer run on sourcegraph/jsonrpc2: its Conn
// keeps the pending calls and matches each response to its call (Conn
// picks the ids, numbers counted from 1, so that they are known before the
// call is written). Everything else of the wire is Conn's own: requests
// and notifications from the peer never reach jsonrpc2 (callStream hands
// it responses only), and replies and notifications are written by Conn,
// so that ids stay the peer's text and params the peer's bytes.

// newCalls starts the jsonrpc2 connection that carries c's calls. Its read
// loop waits for Serve.
func newCalls(c *Conn) *jsonrpc2.Conn {
	logger := log.New(slogWriter{c.log}, "", 0)
	return jsonrpc2.NewConn(context.Background(), callStream{c}, noRequests{}, jsonrpc2.SetLogger(logger))
}

// noRequests is jsonrpc2's handler, which never runs: callStream hands
// jsonrpc2 responses only.
type noRequests struct{}

func (noRequests) Handle(context.Context, *jsonrpc2.Conn, *jsonrpc2.Request) {}

// callStream is the jsonrpc2.ObjectStream of a Conn.
type callStream struct{ c *Conn }

// ReadObject runs Conn's read loop until a response for jsonrpc2 arrives.
// jsonrpc2 closes its connection on any error from here, so the loop itself
// answers what is malformed and reads on; it fails only when reading does.
func (s callStream) ReadObject(v any) error {
	c := s.c
	select {
	case <-c.started:
	default:
		select {
		case <-c.started:
		case <-c.closing: // closed before Serve: nothing to read for
			return ErrClosed
		}
	}
	for {
		resp, err := c.readResponse()
		if err != nil {
			// jsonrpc2 closes the writer once this returns: the answers
			// the read loop gave go out first.
			c.out.flush(flushWait)
			select {
			case <-c.closing:
			default:
				if err != io.EOF {
					c.readErr.Store(&err)
				}
			}
			return err
		}
		if !isCallID(resp.id) {
			c.log.Warn("dropping response whose id was never issued", peerlog.Bytes("id", resp.id))
			continue
		}
		body := resp.body
		if resp.err != nil {
			body = errorResponse(resp.id, resp.err)
		}
		if err := unmarshalFresh(body, v); err != nil {
			// jsonrpc2's decoder refuses it (it matches member names
			// case-insensitively): end the call rather than leave it waiting.
			e := NewError(CodeInvalidRequest, KindInvalidRequest, "malformed response: "+err.Error())
			if err := unmarshalFresh(errorResponse(resp.id, e), v); err != nil {
				return fmt.Errorf("reading message: %w", err)
			}
		}
		return nil
	}
}

// WriteObject writes a call jsonrpc2 sends, waiting for room in the
// outbox as Notify does.
func (s callStream) WriteObject(obj any) error {
	if err := s.c.waitRoom(); err != nil {
		return err
	}
	return s.c.out.write(func(b *bytes.Buffer) error { return encodeJSON(b, obj) })
}

// Close is jsonrpc2 ending its connection: the reader and writer close.
func (s callStream) Close() error { return s.c.closeReaderWriter() }

// isCallID reports whether raw is an id this Conn may have issued: a
// positive decimal integer, which jsonrpc2 decodes as the number it sent.
func isCallID(raw []byte) bool {
	n, ok := parseDecimal(raw)
	return ok && n > 0
}

// errorResponse is an error response to id.
func errorResponse(id json.RawMessage, e *Error) []byte {
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   wireError       `json:"error"`
	}{"2.0", id, e.wire()}) // always marshals
	return b
}

// unmarshalFresh decodes data into a zeroed *v, so that a failed attempt
// leaves nothing behind for the next one.
func unmarshalFresh(data []byte, v any) error {
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && !rv.IsNil() {
		rv.Elem().SetZero()
	}
	return json.Unmarshal(data, v)
}

// Pending is a call sent and not yet answered.
type Pending struct {
	// ID is the call's id as written: a number counted from 1.
	ID json.RawMessage
	w  jsonrpc2.Waiter
}

// Dispatch sends a request and returns without waiting for its answer.
func (c *Conn) Dispatch(method string, params any) (*Pending, error) {
	n := c.callSeq.Add(1)
	w, err := c.calls.DispatchCall(context.Background(), method, params, jsonrpc2.PickID(jsonrpc2.ID{Num: n}))
	if err != nil {
		if errors.Is(err, jsonrpc2.ErrClosed) {
			return nil, ErrClosed
		}
		return nil, err
	}
	return &Pending{ID: json.RawMessage(strconv.FormatUint(n, 10)), w: w}, nil
}

// Wait waits for the answer: its result as the peer wrote it, or its error
// as an *Error, or ErrClosed when the connection closed first, or ctx's
// error.
func (p *Pending) Wait(ctx context.Context) (json.RawMessage, error) {
	var res json.RawMessage
	err := p.w.Wait(ctx, &res)
	var je *jsonrpc2.Error
	switch {
	case err == nil:
		return res, nil
	case errors.As(err, &je):
		e := &Error{Code: je.Code, Message: je.Message}
		if je.Data != nil {
			_ = json.Unmarshal(*je.Data, &e.Data) // data of another shape is left out
		}
		return nil, e
	case errors.Is(err, jsonrpc2.ErrClosed):
		return nil, ErrClosed
	}
	return nil, err
}

// Call sends a request and waits for its answer (see Pending.Wait). When
// ctx ends first, the peer is sent $/cancelRequest for it, as LSP does, and
// its answer, if it comes, is dropped.
func (c *Conn) Call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	p, err := c.Dispatch(method, params)
	if err != nil {
		return nil, err
	}
	res, err := p.Wait(ctx)
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		if nerr := c.Notify(MethodCancelRequest, CancelParams{ID: p.ID}); nerr != nil {
			c.log.Debug("cancellation not written", "method", method, "err", nerr)
		}
	}
	return res, err
}

// slogWriter takes jsonrpc2's log lines (a response to a call that gave
// up, a read error) as debug records; they may quote the peer.
type slogWriter struct{ log *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	w.log.Debug("jsonrpc2", peerlog.Bytes("line", bytes.TrimSpace(p)))
	return len(p), nil
}
