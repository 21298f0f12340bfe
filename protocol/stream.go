package protocol

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/sourcegraph/jsonrpc2"
)

// DefaultMaxFrameBytes is the largest message body a Stream accepts when
// StreamOptions.MaxFrameBytes is not set.
const DefaultMaxFrameBytes = 64 << 20

// ReservedIDPrefix starts the string id a Stream hands to jsonrpc2 in place of
// a request id that jsonrpc2.ID cannot hold (a negative, fractional, exponent
// or out-of-range number). The rest of the string is the id's original JSON
// text; WriteObject turns it back into that text. A host string id that
// happens to start with this prefix is rewritten the same way, so the mapping
// stays one-to-one.
const ReservedIDPrefix = "\x00mcp-sidecar-id:"

const (
	readBufferSize   = 64 << 10 // bufio buffer for the host's input
	maxHeaderLine    = 4 << 10  // longer header lines are malformed
	idPrefixBytes    = 4 << 10  // how much of an oversized body is searched for its id
	initialBodyAlloc = 64 << 10 // bodies grow from this as their bytes arrive
	maxPooledBuffer  = 1 << 20  // WriteObject buffers above this are not reused
	headerRoom       = 40       // fits "Content-Length: " + 19 digits + "\r\n\r\n"
)

// marshaledReservedPrefix is how a *jsonrpc2.Response whose id was rewritten
// starts once marshaled: Response.MarshalJSON puts the id first and
// json.Marshal escapes the NUL byte.
const marshaledReservedPrefix = `{"id":"\u0000mcp-sidecar-id:`

// StreamOptions configures a Stream.
type StreamOptions struct {
	// MaxFrameBytes is the largest body accepted; a larger frame is skipped
	// without being buffered and answered with an error. Zero or negative
	// means DefaultMaxFrameBytes.
	MaxFrameBytes int64
	// Logger receives a record for every frame the stream drops or answers
	// itself. Nil discards them.
	Logger *slog.Logger
	// OmitRequestParams hands requests to jsonrpc2 without their params,
	// which the handler then reads with LastParams: jsonrpc2 would decode
	// them into maps and encode them again (for a 1 MiB argument, most of
	// the cost of a request). For the sidecar's side of the connection.
	OmitRequestParams bool
}

// Stream is a jsonrpc2.ObjectStream speaking the Language Server base
// protocol framing (Content-Length headers) to the host.
//
// jsonrpc2 closes its connection on any error from ReadObject, so the stream
// itself answers what jsonrpc2 must never see and carries on:
//
//   - a bad header block (no Content-Length, a non-numeric or negative or
//     overflowing length, a line without ':' or with a name that is not an
//     HTTP token, a line over 4 KiB, conflicting lengths): -32700 with id
//     null, then a resynchronisation on the next "Content-Length:" in the
//     input (case-insensitive, also found in the middle of the offending
//     line, so a body followed directly by the next header recovers);
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
//     -32600 with the id where it is a string or number, else null.
//
// Responses from the host are never answered (that could ping-pong): one
// that jsonrpc2 could not decode is dropped and logged, unless its id is one
// jsonrpc2 could have issued, in which case it is handed over as an error
// response (-32700 or -32600) so the pending Call ends instead of waiting.
// Blank lines between frames are skipped silently. Header lines may end in
// "\r\n" or "\n"; header names are case-insensitive; every header other than
// Content-Length, Content-Type included, is ignored.
//
// A request jsonrpc2's own decoder still refuses (it matches "Result" or
// "Error" case-insensitively) gets -32600 with its id. The "jsonrpc" member
// is not checked.
//
// Error replies carry data {"kind": "parse_error" | "invalid_request",
// "retryable": false} like every other sidecar error.
//
// A request whose id is null or absent is a notification, as in jsonrpc2.
// A response whose id is null or absent cannot belong to a call of the
// sidecar and is dropped with a log record.
type Stream struct {
	r      *bufio.Reader
	rc, wc any // the reader and writer as given, for Close
	w      io.Writer
	max    int64
	log    *slog.Logger

	// Read side: used only by the goroutine calling ReadObject.
	line   []byte // current header line
	carry  []byte // unread rest of a malformed line that holds a "Content-Length:"
	resync bool   // after a bad header: skip input up to the next "Content-Length:"
	last   []byte // body of the frame ReadObject returned last
	// lastParams is the raw params member of last (nil when absent).
	lastParams []byte
	omitParams bool
	prefix     [idPrefixBytes]byte

	wmu  sync.Mutex // serialises frames on w
	bufs sync.Pool  // *bytes.Buffer for WriteObject

	closeOnce sync.Once
	closeErr  error
}

// NewStream returns a Stream reading frames from r and writing frames to w.
// If r or w is an io.Closer, Close closes it.
func NewStream(r io.Reader, w io.Writer, opts StreamOptions) *Stream {
	s := &Stream{
		r:   bufio.NewReaderSize(r, readBufferSize),
		rc:  r,
		wc:  w,
		w:   w,
		max: opts.MaxFrameBytes,
		log: opts.Logger,

		omitParams: opts.OmitRequestParams,
	}
	if s.max <= 0 {
		s.max = DefaultMaxFrameBytes
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.bufs.New = func() any { return new(bytes.Buffer) }
	return s
}

// LastBody returns the body of the frame most recently returned by
// ReadObject, exactly as the host sent it: a rewritten id (see
// ReservedIDPrefix) appears here in its original form. jsonrpc2 calls
// Handler.Handle synchronously in its read loop right after ReadObject, so a
// handler calling LastBody there gets the bytes of the request it handles.
// Call it only from that goroutine. The returned slice is never modified by
// the stream and may be kept.
func (s *Stream) LastBody() []byte { return s.last }

// LastParams returns the params member of LastBody, byte for byte (nil
// when the message has none), with the same rules as LastBody.
func (s *Stream) LastParams() []byte { return s.lastParams }

// CanonicalID returns the jsonrpc2.ID a handler sees for a request whose id
// has the JSON text raw (as in a message, or in $/cancelRequest params). It
// reports false when raw is not a JSON string or number.
func (s *Stream) CanonicalID(raw json.RawMessage) (jsonrpc2.ID, bool) {
	raw = bytes.Trim(raw, " \t\r\n")
	if len(raw) == 0 || !json.Valid(raw) {
		return jsonrpc2.ID{}, false
	}
	if str, ok := rewrittenID(raw); ok {
		return jsonrpc2.ID{Str: str, IsString: true}, true
	}
	switch c := raw[0]; {
	case c == '"':
		var str string
		if err := json.Unmarshal(raw, &str); err != nil {
			return jsonrpc2.ID{}, false
		}
		return jsonrpc2.ID{Str: str, IsString: true}, true
	case isDigit(c):
		n, _ := plainID(raw) // not rewritten, so plain
		return jsonrpc2.ID{Num: n}, true
	}
	return jsonrpc2.ID{}, false
}

// rewrittenID returns the reserved string id that stands for the valid JSON
// id text raw, if jsonrpc2 cannot carry raw as it is.
func rewrittenID(raw []byte) (string, bool) {
	switch c := raw[0]; {
	case c == '"':
		// Only an escaped NUL can start the decoded string with the prefix.
		if !bytes.HasPrefix(raw, []byte(`"\u0000`)) {
			return "", false
		}
		var str string
		if json.Unmarshal(raw, &str) != nil || !strings.HasPrefix(str, ReservedIDPrefix) {
			return "", false
		}
	case c == '-' || isDigit(c):
		if _, ok := plainID(raw); ok {
			return "", false
		}
	default:
		return "", false
	}
	return ReservedIDPrefix + string(raw), true
}

// WireID returns the JSON text id stands for on the host's side of the wire:
// the original text of a rewritten id, else id's own encoding.
func WireID(id jsonrpc2.ID) json.RawMessage {
	if id.IsString && strings.HasPrefix(id.Str, ReservedIDPrefix) {
		if raw := []byte(id.Str[len(ReservedIDPrefix):]); validIDText(raw) {
			return raw
		}
	}
	b, _ := id.MarshalJSON() // a string or a uint64 always marshals
	return b
}

// plainID reports whether raw is a JSON number jsonrpc2 holds losslessly in
// jsonrpc2.ID.Num and answers with the same text: digits only, at most
// math.MaxInt64 (jsonrpc2 decodes request ids with json.Number.Int64).
func plainID(raw []byte) (uint64, bool) {
	n, ok := parseDecimal(raw)
	return uint64(n), ok
}

// parseDecimal parses b as a non-negative int64 written with digits only.
func parseDecimal(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if !isDigit(c) {
			return 0, false
		}
		n = n*10 + uint64(c-'0') // 19 digits fit in a uint64
	}
	return int64(n), n <= math.MaxInt64
}

// validIDText reports whether raw is the text of a JSON string or number.
func validIDText(raw []byte) bool {
	if len(raw) == 0 || !json.Valid(raw) {
		return false
	}
	c := raw[0]
	return c == '"' || c == '-' || isDigit(c)
}

// WriteObject writes obj as one frame. It is safe for concurrent use: each
// frame goes out in a single Write under a mutex.
func (s *Stream) WriteObject(obj any) error {
	buf := s.bufs.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= maxPooledBuffer {
			buf.Reset()
			s.bufs.Put(buf)
		}
	}()
	// Leave room in front of the body for the header, so that header and
	// body leave in one Write without copying the body again.
	var room [headerRoom]byte
	buf.Reset()
	buf.Write(room[:])
	enc := json.NewEncoder(buf) // escapes HTML like json.Marshal
	if err := enc.Encode(obj); err != nil {
		return fmt.Errorf("encoding message for host: %w", err)
	}
	b := buf.Bytes()
	body := b[headerRoom : len(b)-1] // Encode appends a newline
	if bytes.HasPrefix(body, []byte(marshaledReservedPrefix)) {
		return s.writeFrame(restoreID(body))
	}
	var hdr [headerRoom]byte
	h := appendHeader(hdr[:0], len(body))
	start := headerRoom - len(h)
	copy(b[start:], h)
	return s.write(b[start : len(b)-1])
}

// WriteResult writes the success response to the request id, encoding
// result once. jsonrpc2's Reply marshals the result, then marshals the
// whole message again, compacting the result a second time: for a 10 MiB
// tool result or a large catalog that is most of the sidecar's work. A
// json.RawMessage result is written as it is: it must be valid JSON (the
// sidecar passes bytes an MCP server sent and go-sdk already decoded).
// HTML characters are not escaped.
func (s *Stream) WriteResult(id jsonrpc2.ID, result any) error {
	// Large raw results go out without a copy; small ones are cheaper to
	// copy than to write in three system calls.
	if raw, ok := result.(json.RawMessage); ok && len(raw) > rawWriteThreshold {
		return s.writeRawResult(id, raw)
	}
	buf := s.bufs.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= maxPooledBuffer {
			buf.Reset()
			s.bufs.Put(buf)
		}
	}()
	var room [headerRoom]byte
	buf.Reset()
	buf.Write(room[:])
	buf.WriteString(`{"jsonrpc":"2.0","id":`)
	buf.Write(WireID(id))
	buf.WriteString(`,"result":`)
	switch r := result.(type) {
	case json.RawMessage:
		if len(r) == 0 {
			buf.WriteString("null")
		} else {
			buf.Write(r)
		}
	default:
		enc := json.NewEncoder(buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(result); err != nil {
			return fmt.Errorf("encoding result for host: %w", err)
		}
		buf.Truncate(buf.Len() - 1) // Encode appends a newline
	}
	buf.WriteByte('}')
	b := buf.Bytes()
	var hdr [headerRoom]byte
	h := appendHeader(hdr[:0], len(b)-headerRoom)
	start := headerRoom - len(h)
	copy(b[start:], h)
	return s.write(b[start:])
}

// WriteError writes the error response to the request id. Like
// WriteResult it does not need the jsonrpc2 connection, so replies to
// requests still in flight when the host closed its end of stdin still go
// out on stdout.
func (s *Stream) WriteError(id jsonrpc2.ID, e *jsonrpc2.Error) error {
	errJSON, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encoding error for host: %w", err)
	}
	wid := WireID(id)
	body := make([]byte, 0, len(`{"jsonrpc":"2.0","id":,"error":}`)+len(wid)+len(errJSON))
	body = append(body, `{"jsonrpc":"2.0","id":`...)
	body = append(body, wid...)
	body = append(body, `,"error":`...)
	body = append(body, errJSON...)
	return s.writeFrame(append(body, '}'))
}

// rawWriteThreshold is the size above which WriteResult writes a raw
// result in place.
const rawWriteThreshold = 64 << 10

// writeRawResult writes a response around raw without copying it: the
// frame goes out as three writes under the write lock (header and the
// envelope's head, raw, the closing brace), so a 10 MiB tool result is not
// copied into a frame buffer first.
func (s *Stream) writeRawResult(id jsonrpc2.ID, raw json.RawMessage) error {
	var head []byte
	wid := WireID(id)
	const pre, post = `{"jsonrpc":"2.0","id":`, `,"result":`
	n := len(pre) + len(wid) + len(post) + len(raw) + 1
	head = appendHeader(make([]byte, 0, headerRoom+len(pre)+len(wid)+len(post)), n)
	head = append(head, pre...)
	head = append(head, wid...)
	head = append(head, post...)
	s.wmu.Lock()
	defer s.wmu.Unlock()
	for _, part := range [][]byte{head, raw, {'}'}} {
		if _, err := s.w.Write(part); err != nil {
			return fmt.Errorf("writing message to host: %w", err)
		}
	}
	return nil
}

// restoreID replaces the reserved string id at the start of a marshaled
// response with the original id text. A string that does not decode to a
// valid id is left as it is.
func restoreID(body []byte) []byte {
	const idAt = len(`{"id":`)
	end, ok := scanString(body, idAt)
	if !ok {
		return body
	}
	var str string
	if err := json.Unmarshal(body[idAt:end], &str); err != nil {
		return body
	}
	raw := []byte(str[len(ReservedIDPrefix):])
	if !validIDText(raw) {
		return body
	}
	out := make([]byte, 0, len(body)-(end-idAt)+len(raw))
	out = append(out, body[:idAt]...)
	out = append(out, raw...)
	return append(out, body[end:]...)
}

func appendHeader(dst []byte, n int) []byte {
	dst = append(dst, "Content-Length: "...)
	dst = strconv.AppendInt(dst, int64(n), 10)
	return append(dst, "\r\n\r\n"...)
}

// writeFrame writes body with its header.
func (s *Stream) writeFrame(body []byte) error {
	frame := make([]byte, 0, headerRoom+len(body))
	frame = appendHeader(frame, len(body))
	return s.write(append(frame, body...))
}

func (s *Stream) write(frame []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if _, err := s.w.Write(frame); err != nil {
		return fmt.Errorf("writing message to host: %w", err)
	}
	return nil
}

// Close closes the reader and the writer given to NewStream where they are
// io.Closers (once if they are the same value).
func (s *Stream) Close() error {
	s.closeOnce.Do(func() {
		var errs []error
		if c, ok := s.rc.(io.Closer); ok {
			errs = append(errs, c.Close())
		}
		if c, ok := s.wc.(io.Closer); ok && !sameValue(s.rc, s.wc) {
			errs = append(errs, c.Close())
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// sameValue is a == b without the panic on uncomparable dynamic types.
func sameValue(a, b any) bool {
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	return ta == tb && ta != nil && ta.Comparable() && a == b
}

// ReadObject reads the next request or response from the host into v
// (jsonrpc2 passes its message type). Malformed input is answered or dropped
// as described on Stream and reading goes on. It returns io.EOF when the
// input ends between frames (or while skipping input after a bad header,
// which has been answered already), io.ErrUnexpectedEOF when it ends inside
// a header block or a body, and the error of a failed read or reply write.
func (s *Stream) ReadObject(v any) error {
	for {
		n, err := s.readHeader()
		var he *headerError
		if errors.As(err, &he) {
			s.resync = true
			if err := s.answer(nil, CodeParseError, KindParseError, "invalid message header: "+he.msg); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		var handed bool
		if n > s.max {
			handed, err = s.skipOversized(n, v)
		} else {
			var body []byte
			if body, err = s.readBody(n); err == nil {
				handed, err = s.handle(body, v)
			}
		}
		if err != nil || handed {
			return err
		}
	}
}

type headerError struct{ msg string }

func (e *headerError) Error() string { return e.msg }

func badHeader(format string, args ...any) error {
	return &headerError{msg: fmt.Sprintf(format, args...)}
}

// readHeader reads one header block and returns its Content-Length.
func (s *Stream) readHeader() (int64, error) {
	length := int64(-1)
	inBlock := false
	for {
		line, long, n, err := s.readLine()
		if err != nil {
			if err != io.EOF {
				return 0, fmt.Errorf("reading message header: %w", err)
			}
			if s.resync || (n == 0 && !inBlock) {
				return 0, io.EOF
			}
			return 0, io.ErrUnexpectedEOF
		}
		if s.resync {
			i := indexMarker(line, 0)
			if i < 0 {
				continue
			}
			line, long = line[i:], false
			s.resync = false
		}
		if len(line) == 0 {
			if !inBlock {
				continue // stray blank line between frames
			}
			if length < 0 {
				return 0, badHeader("no Content-Length header")
			}
			return length, nil
		}
		inBlock = true
		if long {
			return 0, s.badLine(line, "header line longer than %d bytes", maxHeaderLine)
		}
		colon := bytes.IndexByte(line, ':')
		if colon < 0 {
			return 0, s.badLine(line, "line %s has no ':'", quote(line))
		}
		if !isToken(line[:colon]) {
			return 0, s.badLine(line, "line %s has no valid header name", quote(line))
		}
		if !equalFold(line[:colon], "content-length") {
			continue // Content-Type and any other header are ignored
		}
		v, ok := parseDecimal(bytes.Trim(line[colon+1:], " \t"))
		if !ok {
			return 0, s.badLine(line, "invalid Content-Length %s", quote(line[colon+1:]))
		}
		if length >= 0 && v != length {
			return 0, s.badLine(line, "conflicting Content-Length headers (%d and %d)", length, v)
		}
		length = v
	}
}

// badLine builds the error for a malformed header line. If the line holds a
// "Content-Length:" past its start (a body without its own line ending,
// followed by the next header), the rest of the line from there is read
// again after the error is answered.
func (s *Stream) badLine(line []byte, format string, args ...any) error {
	if i := indexMarker(line, 1); i > 0 {
		s.carry = append(s.carry[:0], line[i:]...)
	}
	return badHeader(format, args...)
}

// readLine reads one line without its line ending. A line longer than
// maxHeaderLine is consumed whole and returned truncated, with long set. n is
// how many bytes were consumed.
func (s *Stream) readLine() (line []byte, long bool, n int, err error) {
	if s.carry != nil {
		line = append(s.line[:0], s.carry...)
		s.line, s.carry = line, nil
		return line, false, len(line), nil
	}
	s.line = s.line[:0]
	for {
		chunk, err := s.r.ReadSlice('\n')
		n += len(chunk)
		if room := maxHeaderLine + 2 - len(s.line); room > 0 {
			s.line = append(s.line, chunk[:min(room, len(chunk))]...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			return nil, false, n, err
		}
		break
	}
	line = bytes.TrimSuffix(s.line, []byte("\n"))
	line = bytes.TrimSuffix(line, []byte("\r"))
	if n > maxHeaderLine+2 {
		return line[:min(len(line), maxHeaderLine)], true, n, nil
	}
	return line, false, n, nil
}

const marker = "content-length:"

// indexMarker returns the index of the first case-insensitive
// "content-length:" in line at or after from, or -1.
func indexMarker(line []byte, from int) int {
	for i := from; i+len(marker) <= len(line); i++ {
		if equalFold(line[i:i+len(marker)], marker) {
			return i
		}
	}
	return -1
}

// equalFold reports whether b equals the lower-case ASCII string lower,
// ignoring ASCII case.
func equalFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// isToken reports whether b is an HTTP header name (RFC 9110 token).
func isToken(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', isDigit(c):
		case bytes.IndexByte([]byte("!#$%&'*+-.^_`|~"), c) >= 0:
		default:
			return false
		}
	}
	return true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// quote renders a piece of a malformed line for an error message.
func quote(b []byte) string {
	const limit = 64
	if len(b) > limit {
		return strconv.Quote(string(b[:limit])) + "..."
	}
	return strconv.Quote(string(b))
}

// readBody reads n body bytes. Memory grows with the bytes that arrive, not
// with the length announced.
func (s *Stream) readBody(n int64) ([]byte, error) {
	size := int(n)
	buf := make([]byte, 0, min(size, initialBodyAlloc))
	for len(buf) < size {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, min(cap(buf), size-len(buf)))
		}
		m, err := io.ReadFull(s.r, buf[len(buf):min(cap(buf), size)])
		buf = buf[:len(buf)+m]
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil, io.ErrUnexpectedEOF
		}
		if err != nil {
			return nil, fmt.Errorf("reading message body: %w", err)
		}
	}
	return buf, nil
}

// skipOversized consumes a body of n bytes, over the limit, keeping only its
// first few KiB to find its id, and answers it. It reports whether v now
// holds a message for jsonrpc2 (an error response for a call of the
// sidecar's whose response was too large).
func (s *Stream) skipOversized(n int64, v any) (bool, error) {
	head := s.prefix[:min(n, int64(len(s.prefix)))]
	if _, err := io.ReadFull(s.r, head); err != nil {
		return false, unexpected(err)
	}
	for rest := n - int64(len(head)); rest > 0; {
		d, err := s.r.Discard(int(min(rest, 1<<30)))
		rest -= int64(d)
		if err != nil {
			return false, unexpected(err)
		}
	}
	msg := fmt.Sprintf("message of %d bytes exceeds the limit of %d bytes", n, s.max)
	return s.reject(scanMembers(head), CodeParseError, KindParseError, msg, v)
}

func unexpected(err error) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return io.ErrUnexpectedEOF
	}
	return fmt.Errorf("reading message body: %w", err)
}

// handle checks one body and either hands it to jsonrpc2 through v
// (reporting true) or answers or drops it.
func (s *Stream) handle(body []byte, v any) (bool, error) {
	i := skipWS(body, 0)
	if i == len(body) {
		return false, s.answer(nil, CodeParseError, KindParseError, "parse error: empty message body")
	}
	if !json.Valid(body) {
		msg := "parse error"
		var raw json.RawMessage
		if err := json.Unmarshal(body, &raw); err != nil {
			msg += ": " + err.Error()
		}
		return s.reject(scanMembers(body), CodeParseError, KindParseError, msg, v)
	}
	switch body[i] {
	case '{':
	case '[':
		return false, s.answer(nil, CodeInvalidRequest, KindInvalidRequest, "invalid request: batches are not supported")
	default:
		return false, s.answer(nil, CodeInvalidRequest, KindInvalidRequest, "invalid request: a message must be a JSON object")
	}
	m := scanMembers(body)
	isRequest := m.method != nil
	isResponse := m.result != nil || (m.errv != nil && string(m.errv) != "null")
	switch {
	case isRequest && isResponse:
		return s.reject(m, CodeInvalidRequest, KindInvalidRequest, "invalid request: message has both a method and a result or error", v)
	case !isRequest && !isResponse:
		return s.reject(m, CodeInvalidRequest, KindInvalidRequest, "invalid request: message has neither a method nor a result or error", v)
	case isResponse:
		if !responseID(m.id) {
			s.log.Warn("dropping response from host whose id the sidecar never issues",
				"id", string(m.id), "error", string(m.errv))
			return false, nil
		}
		return s.decode(body, body, m, v)
	}
	if m.method[0] != '"' {
		return s.reject(m, CodeInvalidRequest, KindInvalidRequest, "invalid request: method must be a string", v)
	}
	handed := body
	if s.omitParams {
		// jsonrpc2 would decode the params into maps and encode them again;
		// the handler reads them from LastParams instead.
		handed = requestWithoutParams(m)
	}
	if m.id != nil {
		switch c := m.id[0]; {
		case c == '"' || c == '-' || isDigit(c):
			if str, ok := rewrittenID(m.id); ok {
				if s.omitParams {
					q, _ := json.Marshal(str) // a string always marshals
					handed = requestWithoutParams(members{id: q, method: m.method})
				} else {
					handed = rewriteID(body, m, str)
				}
			}
		case c == 'n': // null: a notification, as jsonrpc2 has it
		default:
			m.id = nil
			return s.reject(m, CodeInvalidRequest, KindInvalidRequest, "invalid request: id must be a string, a number or null", v)
		}
	}
	return s.decode(body, handed, m, v)
}

// requestWithoutParams is the request m with only its id and method.
func requestWithoutParams(m members) []byte {
	out := make([]byte, 0, 40+len(m.id)+len(m.method))
	out = append(out, `{"jsonrpc":"2.0"`...)
	if m.id != nil {
		out = append(out, `,"id":`...)
		out = append(out, m.id...)
	}
	out = append(out, `,"method":`...)
	out = append(out, m.method...)
	return append(out, '}')
}

// rewriteID returns body with its id replaced by the JSON string str.
func rewriteID(body []byte, m members, str string) []byte {
	q, _ := json.Marshal(str) // a string always marshals
	out := make([]byte, 0, len(body)-(m.idEnd-m.idStart)+len(q))
	out = append(out, body[:m.idStart]...)
	out = append(out, q...)
	return append(out, body[m.idEnd:]...)
}

// responseID reports whether raw is an id of a call the sidecar may have
// made: a uint64 or a string, which jsonrpc2 decodes in a response.
func responseID(raw []byte) bool {
	var id jsonrpc2.ID
	return raw != nil && string(raw) != "null" && id.UnmarshalJSON(raw) == nil
}

// decode hands body (the host's bytes) to jsonrpc2 as handed (with its id
// rewritten where needed). What jsonrpc2 still refuses is answered.
func (s *Stream) decode(body, handed []byte, m members, v any) (bool, error) {
	if err := unmarshalFresh(handed, v); err != nil {
		var inv *json.InvalidUnmarshalError
		if errors.As(err, &inv) {
			return false, fmt.Errorf("reading message: %w", err)
		}
		return s.reject(m, CodeInvalidRequest, KindInvalidRequest, "invalid request: "+err.Error(), v)
	}
	s.last = body
	s.lastParams = m.params
	return true, nil
}

// unmarshalFresh decodes data into a zeroed *v, so that a failed attempt
// leaves nothing behind for the next one.
func unmarshalFresh(data []byte, v any) error {
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && !rv.IsNil() {
		rv.Elem().SetZero()
	}
	return json.Unmarshal(data, v)
}

// reject answers a malformed request. A malformed response is not answered:
// if its id is one of a call jsonrpc2 may be waiting for, jsonrpc2 gets an
// error response for that call instead (reported as handed over); otherwise
// it is dropped.
func (s *Stream) reject(m members, code int64, kind, msg string, v any) (bool, error) {
	if m.method == nil && m.responseLike {
		if !responseID(m.id) {
			s.log.Warn("dropping malformed response from host", "reason", msg, "id", string(m.id))
			return false, nil
		}
		s.log.Warn("malformed response from host, failing its call", "reason", msg, "id", string(m.id))
		e := NewError(code, kind, "malformed response from host: "+msg).JSONRPC()
		errJSON, _ := json.Marshal(e) // a jsonrpc2.Error always marshals
		synth := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":%s}`, m.id, errJSON)
		if err := unmarshalFresh(synth, v); err != nil {
			return false, fmt.Errorf("reading message: %w", err)
		}
		s.last = synth
		return true, nil
	}
	var id []byte
	if m.id != nil && validIDText(m.id) {
		id = m.id
	}
	return false, s.answer(id, code, kind, msg)
}

// answer writes an error reply for a frame jsonrpc2 never sees. id is the
// JSON text of the id, nil for null.
func (s *Stream) answer(id []byte, code int64, kind, msg string) error {
	s.log.Warn("answering malformed message from host", "code", code, "reason", msg, "id", string(id))
	errJSON, _ := json.Marshal(NewError(code, kind, msg).JSONRPC()) // always marshals
	if id == nil {
		id = []byte("null")
	}
	body := make([]byte, 0, len(`{"jsonrpc":"2.0","id":,"error":}`)+len(id)+len(errJSON))
	body = append(body, `{"jsonrpc":"2.0","id":`...)
	body = append(body, id...)
	body = append(body, `,"error":`...)
	body = append(body, errJSON...)
	return s.writeFrame(append(body, '}'))
}

// members records the top-level members of a message object that matter
// for framing. The last of duplicate keys wins, as in encoding/json.
type members struct {
	id, method, result, errv, params []byte // raw values; nil if absent
	idStart, idEnd                   int
	// responseLike is set when a "result" or "error" key was seen, even if
	// its value could not be read.
	responseLike bool
}

// scanMembers reads the top-level members of the JSON object data starts
// with. It tolerates bad JSON: it stops at the first syntax error or at
// the end of data, keeping what it found before, so it can recover an id
// from a body that is invalid or truncated.
func scanMembers(data []byte) (m members) {
	i := skipWS(data, 0)
	if i >= len(data) || data[i] != '{' {
		return m
	}
	i++
	for {
		i = skipWS(data, i)
		if i >= len(data) || data[i] != '"' {
			return m
		}
		kEnd, ok := scanString(data, i)
		if !ok {
			return m
		}
		name := memberName(data[i:kEnd])
		i = skipWS(data, kEnd)
		if i >= len(data) || data[i] != ':' {
			return m
		}
		i = skipWS(data, i+1)
		vEnd, ok := scanValue(data, i)
		if name == "result" || name == "error" {
			m.responseLike = true
		}
		if !ok {
			return m
		}
		val := data[i:vEnd]
		switch name {
		case "id":
			m.id, m.idStart, m.idEnd = val, i, vEnd
		case "method":
			m.method = val
		case "result":
			m.result = val
		case "error":
			m.errv = val
		case "params":
			m.params = val
		}
		i = skipWS(data, vEnd)
		if i >= len(data) || data[i] != ',' {
			return m
		}
		i++
	}
}

// memberName returns the name of a quoted key if it is one scanMembers
// records, else "".
func memberName(key []byte) string {
	inner := key[1 : len(key)-1]
	if bytes.IndexByte(inner, '\\') >= 0 {
		var s string
		if json.Unmarshal(key, &s) != nil {
			return ""
		}
		inner = []byte(s)
	}
	switch string(inner) {
	case "id":
		return "id"
	case "method":
		return "method"
	case "result":
		return "result"
	case "error":
		return "error"
	case "params":
		return "params"
	}
	return ""
}

func skipWS(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// scanString returns the end of the JSON string starting at data[i].
func scanString(data []byte, i int) (int, bool) {
	if i >= len(data) || data[i] != '"' {
		return i, false
	}
	for j := i + 1; j < len(data); j++ {
		switch c := data[j]; {
		case c == '"':
			return j + 1, true
		case c == '\\':
			j++
		case c < 0x20:
			return j, false
		}
	}
	return len(data), false
}

// scanValue returns the end of the JSON value starting at data[i]. For
// containers it only balances brackets; a scalar must be followed by a
// delimiter, so that a truncated number is not taken for a whole one.
func scanValue(data []byte, i int) (int, bool) {
	if i >= len(data) {
		return i, false
	}
	switch data[i] {
	case '"':
		return scanString(data, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(data); j++ {
			switch data[j] {
			case '"':
				end, ok := scanString(data, j)
				if !ok {
					return end, false
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, true
				}
			}
		}
		return len(data), false
	}
	j := i
	for j < len(data) {
		switch data[j] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return j, j > i
		}
		j++
	}
	return j, false
}
