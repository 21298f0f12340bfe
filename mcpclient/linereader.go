package mcpclient

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/mcp-sidecar/mcp-sidecar/internal/jsonscan"
	"github.com/mcp-sidecar/mcp-sidecar/internal/peerlog"
	"github.com/mcp-sidecar/mcp-sidecar/internal/pipeio"
)

// lineReader is the server's stdout as go-sdk should see it: only lines
// that are JSON objects (or batches). Anything else (banners, a stray
// console.log) is counted, reported and skipped, because one such line
// would otherwise end the session.
//
// Memory is bounded by the line, not by what the server writes: a line
// whose first byte (after spaces) is not '{' or '[' cannot be JSON, so it
// is skipped as it streams by, keeping only a prefix for the report,
// however long it is. A line that starts like JSON is assembled up to max
// bytes; longer is fatal (a response that big is lost either way, and a
// clear "line too long" beats a call that hangs until its timeout). The
// buffer of a long line is handed over with the line, not kept for life.
//
// The sidecar's own log gets at most logSkippedBurst skipped lines at once
// and logSkippedPerSec after that, with counts; every line still goes to
// the SkippedLine handler, whose consumer (mcp/log) has its own limit.
type lineReader struct {
	f       *os.File
	r       *bufio.Reader
	max     int
	skipped func(string)
	sized   func(int) // Options.MessageSize; nil: none
	logger  *slog.Logger
	server  string
	now     func() time.Time
	logs    *rate.Limiter

	line []byte // the JSON line being assembled, reused while small
	err  error  // a read error to report after the last line was judged

	mu       sync.Mutex
	fatal    error
	count    int    // non-JSON lines skipped
	first    string // the first of them, cut to firstSkippedBytes
	unlogged int    // skipped and not logged since the last log line

	closeOnce sync.Once
}

const (
	// handOverLine is the buffer size above which a JSON line is handed
	// over with its buffer instead of copied out of it (and the next line
	// gets a buffer of its own): a connection that once saw a long line
	// does not keep its buffer for life.
	handOverLine = 64 << 10
	// reportBytes is how much of a skipped line is reported.
	reportBytes = 4096
	// firstSkippedBytes is how much of the first skipped line is kept
	// for Conn.SkippedLines.
	firstSkippedBytes = 200
	// The sidecar's log of skipped lines.
	logSkippedPerSec = 1
	logSkippedBurst  = 10
)

// errLineTooLong wraps the fatal over-long line.
var errLineTooLong = errors.New("line too long")

func newLineReader(f *os.File, opts *Options) *lineReader {
	now := opts.clock
	if now == nil {
		now = time.Now
	}
	return &lineReader{
		f:       f,
		r:       bufio.NewReaderSize(pipeio.Reader(f), 64<<10), // raw read(2): see internal/pipeio
		max:     opts.MaxLineBytes,
		skipped: opts.Handlers.SkippedLine,
		sized:   opts.MessageSize,
		logger:  opts.Logger,
		server:  opts.Name,
		now:     now,
		logs:    rate.NewLimiter(logSkippedPerSec, logSkippedBurst),
	}
}

// readLine returns the next JSON line, without its newline. owned reports
// whether the line is the caller's to keep; otherwise it is valid until
// the next call (the reader's buffer), and a caller that keeps it copies
// it: the answer to a raw call is written to the host before the next
// line is read, and needs no copy.
func (l *lineReader) readLine() (line []byte, owned bool, err error) {
	for {
		line, owned, err := l.next()
		if err != nil || line != nil {
			return line, owned, err
		}
	}
}

// What next has learnt of the line it reads from its first bytes.
const (
	undecided = iota // only spaces so far
	jsonish          // starts with '{' or '['
	junk             // cannot be JSON
)

// next reads one line: a JSON line, or nil for a line skipped, or the
// error that ends the stream; owned as for readLine.
func (l *lineReader) next() (line []byte, owned bool, err error) {
	if l.err != nil {
		return nil, false, l.err
	}
	l.line = l.line[:0]
	var prefix []byte // of a junk line, for the report
	kind, total := undecided, 0
	for {
		chunk, err := l.r.ReadSlice('\n')
		total += len(chunk)
		if kind == undecided {
			switch firstNonSpace(chunk) {
			case 0:
			case '{', '[':
				kind = jsonish
			default:
				kind = junk
			}
		}
		switch kind {
		case jsonish:
			if len(l.line)+len(chunk) > l.max+1 { // +1: the newline
				ferr := fmt.Errorf("%w: the server wrote a line of more than %d bytes on stdout", errLineTooLong, l.max)
				l.mu.Lock()
				l.fatal = ferr
				l.mu.Unlock()
				l.line = nil
				return nil, false, ferr
			}
			if len(l.line)+len(chunk) > cap(l.line) {
				// Grown fourfold: a large line leaves a third of itself
				// behind as garbage, where append's smaller steps would
				// leave several times itself.
				l.line = slices.Grow(l.line, max(3*cap(l.line), len(chunk)))
			}
			l.line = append(l.line, chunk...)
		case junk:
			if n := reportBytes + 1 - len(prefix); n > 0 {
				prefix = append(prefix, chunk[:min(n, len(chunk))]...)
			}
		}
		if err == nil {
			break
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if kind == undecided {
			return nil, false, err
		}
		l.err = err // judge the last line (no newline), then report err
		break
	}
	switch kind {
	case undecided:
		return nil, false, nil // an empty line
	case junk:
		line := bytes.TrimSpace(prefix)
		if total > len(prefix) {
			l.report(fmt.Sprintf("%s... (%d bytes)", truncate(line, reportBytes), total))
		} else {
			l.report(truncate(line, reportBytes))
		}
		return nil, false, nil
	}
	if l.sized != nil {
		// Told of a JSON line only: the others stream by, kept no more
		// than reportBytes of.
		l.sized(len(l.line))
	}
	line = bytes.TrimSpace(l.line)
	if !jsonscan.Valid(line) { // encoding/json.Valid, in a third of its time
		l.report(truncate(line, reportBytes))
		line = nil
	}
	if cap(l.line) > handOverLine {
		// Handed over with the line, or dropped: a connection that once
		// saw a long line must not hold its buffer for life.
		l.line = nil
		return line, true, nil
	}
	return line, false, nil
}

// report counts a skipped line, logs it within the log's rate, and passes
// it to the handler.
func (l *lineReader) report(line string) {
	l.mu.Lock()
	l.count++
	if l.count == 1 {
		l.first = truncate([]byte(line), firstSkippedBytes)
	}
	count, unlogged := l.count, l.unlogged
	logIt := l.logs.AllowN(l.now(), 1)
	if logIt {
		l.unlogged = 0
	} else {
		l.unlogged++
	}
	l.mu.Unlock()
	if logIt {
		l.logger.Warn("skipped a non-JSON line on the server's stdout", "server", l.server, peerlog.String("line", line),
			"skipped", count, "not_logged_before", unlogged)
	}
	if l.skipped != nil {
		l.skipped(line)
	}
}

// skippedLines is how many non-JSON lines were skipped, and the first.
func (l *lineReader) skippedLines() (int, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.count, l.first
}

// fatalErr is the reason the reader gave up, if it did.
func (l *lineReader) fatalErr() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fatal
}

// Close closes the pipe and logs the skipped lines the rate limit kept out
// of the log.
func (l *lineReader) Close() error {
	var err error
	l.closeOnce.Do(func() {
		err = l.f.Close()
		l.mu.Lock()
		count, unlogged := l.count, l.unlogged
		l.mu.Unlock()
		if unlogged > 0 {
			l.logger.Warn("non-JSON lines skipped on the server's stdout", "server", l.server, "skipped", count, "not_logged", unlogged)
		}
	})
	return err
}

func firstNonSpace(b []byte) byte {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 {
		return 0
	}
	return b[0]
}

func truncate(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "..."
}
