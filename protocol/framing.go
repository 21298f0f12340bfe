package protocol

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/mcp-sidecar/mcp-sidecar/internal/outbox"
)

// DefaultMaxFrameBytes is the largest message body a Conn accepts when
// ConnOptions.MaxFrameBytes is not set.
const DefaultMaxFrameBytes = 64 << 20

const (
	readBufferSize   = 64 << 10 // bufio buffer for the peer's input
	maxHeaderLine    = 4 << 10  // longer header lines are malformed
	idPrefixBytes    = 4 << 10  // how much of an oversized body is searched for its id
	initialBodyAlloc = 64 << 10 // bodies grow from this as their bytes arrive
	maxPooledBuffer  = 1 << 20  // frame buffers above this are not reused
	headerRoom       = 40       // fits "Content-Length: " + 19 digits + "\r\n\r\n"
	// rawWriteThreshold is the size above which a raw result is written in
	// place rather than copied into a frame buffer.
	rawWriteThreshold = 64 << 10
)

// frameReader reads the Language Server base protocol's frames: a header
// block with a Content-Length, then that many bytes of body.
//
// A bad header block (no Content-Length, a non-numeric, negative or
// overflowing length, a line without ':' or with a name that is not an
// HTTP token, a line over 4 KiB, conflicting lengths) is reported as a
// *headerError, after which the reader resynchronises on the next
// "Content-Length:" in the input (case-insensitive, also found in the
// middle of the offending line, so a body followed directly by the next
// header recovers). Blank lines between frames are skipped. Header lines
// may end in "\r\n" or "\n"; header names are case-insensitive; every
// header other than Content-Length, Content-Type included, is ignored.
type frameReader struct {
	r   *bufio.Reader
	max atomic.Int64 // the largest body read; set from other goroutines

	line   []byte // current header line
	carry  []byte // unread rest of a malformed line that holds a "Content-Length:"
	resync bool   // after a bad header: skip input up to the next "Content-Length:"
	prefix [idPrefixBytes]byte
}

func newFrameReader(r io.Reader, max int64) *frameReader {
	if max <= 0 {
		max = DefaultMaxFrameBytes
	}
	fr := &frameReader{r: bufio.NewReaderSize(r, readBufferSize)}
	fr.max.Store(max)
	return fr
}

// frame is one frame read: its body, or for a body over the limit only its
// first bytes (head), its length and the limit.
type frame struct {
	body     []byte
	head     []byte // of an oversized body; valid until the next read
	oversize int64  // the announced length of an oversized body; 0 otherwise
	limit    int64  // the limit an oversized body exceeded
}

// next reads the next frame. It returns a *headerError for a bad header
// block (reading may go on), io.EOF when the input ends between frames (or
// while skipping input after a bad header), io.ErrUnexpectedEOF when it
// ends inside a header block or a body, and the error of a failed read.
func (fr *frameReader) next() (frame, error) {
	n, err := fr.readHeader()
	if err != nil {
		if _, ok := err.(*headerError); ok {
			fr.resync = true
		}
		return frame{}, err
	}
	if max := fr.max.Load(); n > max {
		head, err := fr.skip(n)
		return frame{head: head, oversize: n, limit: max}, err
	}
	body, err := fr.readBody(n)
	return frame{body: body}, err
}

type headerError struct{ msg string }

func (e *headerError) Error() string { return e.msg }

func badHeader(format string, args ...any) error {
	return &headerError{msg: fmt.Sprintf(format, args...)}
}

// readHeader reads one header block and returns its Content-Length.
func (fr *frameReader) readHeader() (int64, error) {
	length := int64(-1)
	inBlock := false
	for {
		line, long, n, err := fr.readLine()
		if err != nil {
			if err != io.EOF {
				return 0, fmt.Errorf("reading message header: %w", err)
			}
			if fr.resync || (n == 0 && !inBlock) {
				return 0, io.EOF
			}
			return 0, io.ErrUnexpectedEOF
		}
		if fr.resync {
			i := indexMarker(line, 0)
			if i < 0 {
				continue
			}
			line, long = line[i:], false
			fr.resync = false
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
			return 0, fr.badLine(line, "header line longer than %d bytes", maxHeaderLine)
		}
		colon := bytes.IndexByte(line, ':')
		if colon < 0 {
			return 0, fr.badLine(line, "line %s has no ':'", quote(line))
		}
		if !isToken(line[:colon]) {
			return 0, fr.badLine(line, "line %s has no valid header name", quote(line))
		}
		if !equalFold(line[:colon], "content-length") {
			continue // Content-Type and any other header are ignored
		}
		v, ok := parseDecimal(bytes.Trim(line[colon+1:], " \t"))
		if !ok {
			return 0, fr.badLine(line, "invalid Content-Length %s", quote(line[colon+1:]))
		}
		if length >= 0 && v != length {
			return 0, fr.badLine(line, "conflicting Content-Length headers (%d and %d)", length, v)
		}
		length = v
	}
}

// badLine builds the error for a malformed header line. If the line holds a
// "Content-Length:" past its start (a body without its own line ending,
// followed by the next header), the rest of the line from there is read
// again after the error is answered.
func (fr *frameReader) badLine(line []byte, format string, args ...any) error {
	if i := indexMarker(line, 1); i > 0 {
		fr.carry = append(fr.carry[:0], line[i:]...)
	}
	return badHeader(format, args...)
}

// readLine reads one line without its line ending. A line longer than
// maxHeaderLine is consumed whole and returned truncated, with long set. n is
// how many bytes were consumed.
func (fr *frameReader) readLine() (line []byte, long bool, n int, err error) {
	if fr.carry != nil {
		line = append(fr.line[:0], fr.carry...)
		fr.line, fr.carry = line, nil
		return line, false, len(line), nil
	}
	fr.line = fr.line[:0]
	for {
		chunk, err := fr.r.ReadSlice('\n')
		n += len(chunk)
		if room := maxHeaderLine + 2 - len(fr.line); room > 0 {
			fr.line = append(fr.line, chunk[:min(room, len(chunk))]...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			return nil, false, n, err
		}
		break
	}
	line = bytes.TrimSuffix(fr.line, []byte("\n"))
	line = bytes.TrimSuffix(line, []byte("\r"))
	if n > maxHeaderLine+2 {
		return line[:min(len(line), maxHeaderLine)], true, n, nil
	}
	return line, false, n, nil
}

// readBody reads n body bytes. Memory grows with the bytes that arrive, not
// with the length announced: by four times what arrived, up to n, so that
// a large body leaves a third of itself behind as garbage, not all of it.
func (fr *frameReader) readBody(n int64) ([]byte, error) {
	size := int(n)
	buf := make([]byte, 0, min(size, initialBodyAlloc))
	for len(buf) < size {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, min(3*cap(buf), size-len(buf)))
		}
		m, err := io.ReadFull(fr.r, buf[len(buf):min(cap(buf), size)])
		buf = buf[:len(buf)+m]
		if err != nil {
			return nil, unexpected(err)
		}
	}
	return buf, nil
}

// skip consumes a body of n bytes, over the limit, keeping only its first
// few KiB (to find its id in).
func (fr *frameReader) skip(n int64) ([]byte, error) {
	head := fr.prefix[:min(n, int64(len(fr.prefix)))]
	if _, err := io.ReadFull(fr.r, head); err != nil {
		return nil, unexpected(err)
	}
	for rest := n - int64(len(head)); rest > 0; {
		d, err := fr.r.Discard(int(min(rest, 1<<30)))
		rest -= int64(d)
		if err != nil {
			return nil, unexpected(err)
		}
	}
	return head, nil
}

func unexpected(err error) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return io.ErrUnexpectedEOF
	}
	return fmt.Errorf("reading message body: %w", err)
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

// quote renders a piece of a malformed line for an error message.
func quote(b []byte) string {
	const limit = 64
	if len(b) > limit {
		return strconv.Quote(string(b[:limit])) + "..."
	}
	return strconv.Quote(string(b))
}

// frameWriter is the one writer of a connection's outgoing frames: every
// message leaves through it, each frame whole, in the order it was handed
// over (an outbox.Outbox), in a single Write where it fits in a pooled
// buffer, and as valid UTF-8 (see appendValidUTF8) with no lone surrogate
// escape (loneSurrogates).
//
// A frame is written by its sender when nobody else writes (write,
// writeRaw), else queued: the sender returns without waiting for the
// frames ahead of it, so that no goroutine waits per frame. Frames the
// read loop sends are written by a goroutine (writeLater): the read loop
// must keep reading even while the peer does not read, or two peers that
// both answer on their read loops could each wait for the other's reading
// forever. What waits to be written is bounded by those who produce it:
// past maxQueuedFrames or maxQueuedBytes the outbox is full (room), and
// the peer's new requests wait to be handled (hold.go), and Notify and
// calls wait, until it is back at half.
type frameWriter struct {
	w    io.Writer
	bufs sync.Pool // *bytes.Buffer
	out  *outbox.Outbox
	// sized is told each frame's size as it is handed over and once it
	// was written; set before use.
	sized func(n int)
}

// The outbox's limit: past either, the peer is taken to not read.
const (
	maxQueuedFrames = 1024
	maxQueuedBytes  = 16 << 20
)

// flushWait bounds how long the read loop's answers may take to leave once
// reading ended: a peer that closed its output but never reads must not
// keep the process alive.
const flushWait = 5 * time.Second

func newFrameWriter(w io.Writer) *frameWriter {
	fw := &frameWriter{w: w, sized: func(int) {}}
	fw.bufs.New = func() any { return new(bytes.Buffer) }
	fw.out = outbox.New(fw.writeOut)
	fw.out.MaxCount = maxQueuedFrames
	fw.out.MaxBytes = maxQueuedBytes
	return fw
}

// write frames the body that fill appends to a buffer and writes it in
// its turn, with write's error when the caller wrote it, nil when it was
// queued. The buffer has room for the header in front, so that header and
// body leave in one Write without copying the body again. A queued frame
// takes its buffer along; the buffer is dropped once written.
func (fw *frameWriter) write(fill func(*bytes.Buffer) error) error {
	buf := fw.bufs.Get().(*bytes.Buffer)
	frame, err := render(buf, fill)
	if err != nil {
		fw.release(buf)
		return err
	}
	fw.sized(len(frame))
	queued, err := fw.out.Post([][]byte{frame}, nil)
	if !queued {
		fw.release(buf)
	}
	return err
}

// release puts a buffer back in the pool, unless it grew large: a large
// payload's buffer is dropped, not kept for the connection's life.
func (fw *frameWriter) release(buf *bytes.Buffer) {
	if buf.Cap() <= maxPooledBuffer {
		buf.Reset()
		fw.bufs.Put(buf)
	}
}

// writeLater frames the body that fill appends and hands it to be written
// in its turn, without waiting for the peer to read it. A write error is
// not reported: the peer is gone, and the read loop learns that by reading.
func (fw *frameWriter) writeLater(fill func(*bytes.Buffer) error) error {
	frame, err := render(new(bytes.Buffer), fill)
	if err != nil {
		return err
	}
	fw.sized(len(frame))
	fw.out.SendLater([][]byte{frame}, nil, func(f func()) bool { go f(); return true }) // the goroutine ends when the outbox is empty
	return nil
}

// writeRaw writes a frame whose body is head, payload and tail, in its
// turn: when the caller writes it, the payload goes out without being
// copied into a frame buffer; a queued frame is copied whole, since the
// caller may reuse payload once writeRaw returned.
func (fw *frameWriter) writeRaw(head, payload, tail []byte) error {
	n := len(head) + len(payload) + len(tail)
	fw.sized(n)
	if !utf8.Valid(head) || !utf8.Valid(payload) || !utf8.Valid(tail) || loneSurrogates(payload, false) {
		// Rare: repaired whole (a sequence could straddle two parts) into
		// a frame of its own; payload is the caller's, not to be changed.
		b := appendValidUTF8(make([]byte, headerRoom, headerRoom+n+n/8), slices.Concat(head, payload, tail))
		loneSurrogates(b[headerRoom:], true)
		frame := placeHeader(b)
		_, err := fw.out.Post([][]byte{frame}, nil)
		return err
	}
	h := appendHeader(make([]byte, 0, headerRoom+len(head)), n)
	h = append(h, head...)
	_, err := fw.out.Post([][]byte{h, payload, tail}, func(parts [][]byte) [][]byte {
		return [][]byte{slices.Concat(parts...)}
	})
	return err
}

// flush waits until the frames handed over so far are written (or a
// write failed), for at most d, and reports whether they were.
func (fw *frameWriter) flush(d time.Duration) bool { return fw.out.Flush(d) }

// room is nil while the outbox is under its limit, else a channel closed
// when it is back at half of it.
func (fw *frameWriter) room() <-chan struct{} { return fw.out.Room() }

// render frames the body fill appends to buf: the frame is a slice of buf,
// or of a buffer of its own when the body had to be made valid UTF-8.
func render(buf *bytes.Buffer, fill func(*bytes.Buffer) error) ([]byte, error) {
	var room [headerRoom]byte
	buf.Reset()
	buf.Write(room[:])
	if err := fill(buf); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	if body := b[headerRoom:]; !utf8.Valid(body) {
		b = appendValidUTF8(make([]byte, headerRoom, len(b)+len(body)/8), body)
	}
	loneSurrogates(b[headerRoom:], true) // b is the frame's own
	return placeHeader(b), nil
}

// loneSurrogates reports whether the JSON text b has a \u escape of a
// UTF-16 surrogate that is not half of a pair: a high one (\ud800 to
// \udbff) not followed by a low one's escape, or a low one (\udc00 to
// \udfff) not preceded by a high one's. JSON's grammar allows them, but
// they stand for no character, and strict parsers (Rust's serde_json)
// refuse the whole message. With fix, each becomes \ufffd in place (the
// same six bytes), as Go's encoding/json decodes it.
func loneSurrogates(b []byte, fix bool) bool {
	found := false
	for i := 0; ; {
		j := bytes.Index(b[i:], []byte(`\u`))
		if j < 0 {
			return found
		}
		i += j
		// An escape begins with an odd run of backslashes: in \\u the
		// backslash is escaped and u is a letter.
		run := 1
		for k := i - 1; k >= 0 && b[k] == '\\'; k-- {
			run++
		}
		if run%2 == 0 {
			i += 2
			continue
		}
		r, ok := hex4(b[i+2:])
		switch {
		case !ok || r < 0xd800 || r > 0xdfff:
			i += 2
			continue
		case r < 0xdc00 && i+12 <= len(b) && b[i+6] == '\\' && b[i+7] == 'u':
			if r2, ok := hex4(b[i+8:]); ok && r2 >= 0xdc00 && r2 <= 0xdfff {
				i += 12 // a pair
				continue
			}
		}
		found = true
		if !fix {
			return true
		}
		copy(b[i:], `\ufffd`)
		i += 6
	}
}

// hex4 is the value of the four hex digits b starts with.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// placeHeader writes the header for the body that follows headerRoom bytes
// of b into the end of that room, and returns the frame.
func placeHeader(b []byte) []byte {
	var hdr [headerRoom]byte
	h := appendHeader(hdr[:0], len(b)-headerRoom)
	start := headerRoom - len(h)
	copy(b[start:], h)
	return b[start:]
}

// appendValidUTF8 appends src to dst with each byte that does not start a
// valid UTF-8 sequence replaced by U+FFFD, as encoding/json does in the
// strings it encodes. Only bytes of 0x80 and above are ever replaced, and
// the bytes of a valid sequence are never taken apart, so JSON stays JSON:
// quotes, backslashes and escapes are ASCII, and a valid JSON text can hold
// non-ASCII bytes only inside its strings.
func appendValidUTF8(dst, src []byte) []byte {
	for len(src) > 0 {
		i := 0
		for i < len(src) {
			if src[i] < utf8.RuneSelf {
				i++
				continue
			}
			r, n := utf8.DecodeRune(src[i:])
			if r == utf8.RuneError && n == 1 {
				break
			}
			i += n
		}
		dst = append(dst, src[:i]...)
		if i == len(src) {
			break
		}
		dst = append(dst, "\uFFFD"...)
		src = src[i+1:]
	}
	return dst
}

// writeOut writes parts; the outbox's one writer calls it.
func (fw *frameWriter) writeOut(parts [][]byte) error {
	n := 0
	for _, p := range parts {
		if _, err := fw.w.Write(p); err != nil {
			return fmt.Errorf("writing message: %w", err)
		}
		n += len(p)
	}
	// The end of a large frame's life, as far as the writer goes: a
	// release of its memory must come after it.
	fw.sized(n)
	return nil
}

func appendHeader(dst []byte, n int) []byte {
	dst = append(dst, "Content-Length: "...)
	dst = strconv.AppendInt(dst, int64(n), 10)
	return append(dst, "\r\n\r\n"...)
}
