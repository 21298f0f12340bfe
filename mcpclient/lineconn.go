package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcp-sidecar/mcp-sidecar/internal/jsonscan"
	"github.com/mcp-sidecar/mcp-sidecar/internal/outbox"
)

// lineConn is the stdio connection: newline-delimited JSON-RPC over the
// server's pipes, read through the lineReader (which already assembles and
// checks each line). It is an mcp.Connection, go-sdk's interface, but the
// wire reads it through readLines, its fast path: a response's result is a
// slice of the line read, handed to its receiver without a copy or a
// decoding into Go values, and a tools/call is written from the caller's
// bytes without a goroutine (send).
//
// go-sdk's IOTransport decodes each message twice through a buffering
// decoder: a json.Decoder over the stream, then DecodeMessage over the
// raw message, each growing a buffer and copying the bytes. For a 10 MiB
// tool result that is six or seven copies of the payload.
// errInputClosed wraps a failed write to the server's stdin (EPIPE when
// the server closed it or died).
var errInputClosed = errors.New("the server closed its input")

type lineConn struct {
	lines *lineReader
	queue []jsonrpc.Message // the rest of a batch (2025-03-26 servers); Read's

	// The server's input takes messages in the order they were sent (a
	// notifications/cancelled never overtakes its request), whether the
	// sender waits (Write) or not (send: a call from the host's read loop).
	outOnce     sync.Once
	out         *outbox.Outbox // writes with writeOut; see outbox()
	w           io.WriteCloser
	writeFailed func(error)

	closeOnce sync.Once
}

func (c *lineConn) SessionID() string { return "" }

// Read returns the next message, for a reader of the mcp.Connection
// interface (the wire uses readLines instead). One goroutine reads; Close
// unblocks it by closing the pipe.
func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for len(c.queue) == 0 {
		line, owned, err := c.lines.readLine()
		if err != nil {
			return nil, err
		}
		if !owned {
			line = bytes.Clone(line) // go-sdk's message keeps slices of it
		}
		if line[0] == '[' {
			var items []json.RawMessage
			if err := json.Unmarshal(line, &items); err != nil {
				return nil, fmt.Errorf("decoding batch: %w", err)
			}
			for _, it := range items {
				msg, err := decodeLine(it)
				if err != nil {
					return nil, err
				}
				c.queue = append(c.queue, msg)
			}
			continue
		}
		return decodeLine(line)
	}
	msg := c.queue[0]
	c.queue = c.queue[1:]
	return msg, nil
}

// decodeLine decodes one message. A successful response's result is a
// slice of line, which is this message's own copy; everything else goes
// through go-sdk's decoder.
func decodeLine(line []byte) (jsonrpc.Message, error) {
	if res, id, ok := splitResult(line); ok {
		var v any
		if err := json.Unmarshal(id, &v); err == nil {
			if jid, err := jsonrpc.MakeID(v); err == nil && jid.IsValid() {
				return &jsonrpc.Response{ID: jid, Result: res}, nil
			}
		}
	}
	return jsonrpc.DecodeMessage(line)
}

// splitResult finds the id and result of a line that is a success
// response: an object with "jsonrpc":"2.0", an "id", a "result", and no
// other member. Anything else is left to the full decoder. The line is
// valid JSON (lineReader checked it), so finding each value's extent is
// enough; nothing is copied.
func splitResult(line []byte) (result, id []byte, ok bool) {
	m, ok := jsonscan.Object(line)
	if !ok {
		return nil, nil, false
	}
	version := false
	for {
		name, value, more := m.Next()
		if !more {
			break
		}
		switch {
		case jsonscan.NameIs(name, "result"):
			result = value
		case jsonscan.NameIs(name, "id"):
			id = value
		case jsonscan.NameIs(name, "jsonrpc"):
			version = string(value) == `"2.0"`
		default: // method, error, or anything else: not the fast case
			return nil, nil, false
		}
	}
	return result, id, version && result != nil && id != nil
}

// Write writes a message, after the messages sent before it, and waits
// until it is written.
func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encoding message: %w", err)
	}
	// A large message (a 1 MiB argument) goes out as it is; its newline
	// follows in a second write rather than a copy.
	parts := [][]byte{append(data, '\n')}
	if len(data) > 64<<10 {
		parts = [][]byte{data, {'\n'}}
	}
	return c.writeParts(parts...)
}

// writeParts writes one message given in parts, the last ending with the
// newline, after the messages sent before it, and waits until it is
// written.
func (c *lineConn) writeParts(parts ...[]byte) error { return c.outbox().Send(parts...) }

// outbox is c's outbox, made on first use (tests build lineConns as
// literals).
func (c *lineConn) outbox() *outbox.Outbox {
	c.outOnce.Do(func() { c.out = outbox.New(c.writeOut) })
	return c.out
}

// writeOut writes parts with blocking writes; the outbox's one writer
// calls it.
func (c *lineConn) writeOut(parts [][]byte) error {
	for _, p := range parts {
		if _, err := c.w.Write(p); err != nil {
			return c.writeErr(err)
		}
	}
	return nil
}

// writeErr says what a failed write means: os.ErrClosed, that we closed
// stdin ourselves (Close); anything else, that the server stopped reading,
// which ends the connection.
func (c *lineConn) writeErr(err error) error {
	if err == nil || errors.Is(err, os.ErrClosed) {
		return err
	}
	err = fmt.Errorf("%w: %w", errInputClosed, err)
	if c.writeFailed != nil {
		c.writeFailed(err)
	}
	return err
}

// noWaitWriter writes what the server's input takes at once (stdin's
// onceCloser).
type noWaitWriter interface {
	writeNoWait(b []byte) int
}

// send sends one message given in parts (the last ending with the
// newline) without blocking its caller: the host's read loop sends
// tools/call this way, and one server that does not read its input must
// not hold up the others. It is written after every message sent before
// it: what the server's input takes at once here, the rest by the one
// writing or by a goroutine that spawn starts. spawn reports false when
// the connection ended: nothing more is written then. A failed write ends
// the connection (writeFailed), which is how a sender learns of it.
func (c *lineConn) send(parts [][]byte, spawn func(func()) bool) {
	var try func([][]byte) [][]byte
	if nw, ok := c.w.(noWaitWriter); ok {
		try = func(parts [][]byte) [][]byte {
			for len(parts) > 0 {
				n := nw.writeNoWait(parts[0])
				if n < len(parts[0]) {
					parts[0] = parts[0][n:]
					break
				}
				parts = parts[1:]
			}
			return parts
		}
	}
	c.outbox().SendLater(parts, try, spawn)
}

func (c *lineConn) Close() error {
	var err error
	c.closeOnce.Do(func() {
		err = c.w.Close()
		if cerr := c.lines.Close(); err == nil {
			err = cerr
		}
	})
	return err
}
