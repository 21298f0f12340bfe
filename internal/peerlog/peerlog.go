// Package peerlog keeps what a peer sent (the host, a server) from
// reaching the log in bulk. A log attribute that carries a peer's bytes is
// made with Bytes, String or Err: it shows at most MaxBytes of them, with
// their total size, and marks its record; a Handler lets the marked
// records of each message through at a bounded rate, with a count of the
// ones it held back. A peer that sends 64 MiB of garbage, or the same
// malformed message a million times, costs the log a few lines.
package peerlog

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/time/rate"
)

// MaxBytes is how much of a peer's bytes an attribute keeps.
const MaxBytes = 256

// text is an attribute value made from a peer's bytes. It refers to them
// whole (a scrubber may need the whole: see Rewrite) and is cut when it is
// resolved; a Handler knows the record by it. A record is handled while
// it is logged, so the attribute keeps the peer's buffer no longer.
type text struct {
	b []byte // the peer's bytes, or
	s string // the peer's text
}

// LogValue is the text, cut to MaxBytes with its size.
func (t text) LogValue() slog.Value {
	n := len(t.b) + len(t.s)
	if n <= MaxBytes {
		return slog.StringValue(string(t.b) + t.s)
	}
	head := t.b
	if head == nil {
		head = []byte(t.s[:MaxBytes+1])
	}
	return slog.StringValue(string(head[:cut(head)]) + "... (" + strconv.Itoa(n) + " bytes in all)")
}

// Bytes is a log attribute holding b as text: all of it up to MaxBytes,
// else its first MaxBytes (cut before a UTF-8 sequence) and its size.
func Bytes(key string, b []byte) slog.Attr {
	if len(b) <= MaxBytes {
		return slog.Any(key, text{s: string(b)})
	}
	return slog.Any(key, text{b: b})
}

// String is Bytes for a string.
func String(key, s string) slog.Attr { return slog.Any(key, text{s: s}) }

// Rewrite returns a with f applied to the whole of the peer's text it
// holds, and true; a and false when a holds none. It is for a handler that
// rewrites what it logs, such as one that replaces secrets: the text is
// then cut after f saw it whole, so that a secret across the cut is found,
// and the record stays marked (and rate-limited by a Handler).
func Rewrite(a slog.Attr, f func(string) string) (slog.Attr, bool) {
	if a.Value.Kind() != slog.KindLogValuer {
		return a, false
	}
	t, ok := a.Value.Any().(text)
	if !ok {
		return a, false
	}
	return slog.Any(a.Key, text{s: f(string(t.b) + t.s)}), true
}

// Err is String for an error whose message may quote a peer.
func Err(key string, err error) slog.Attr {
	if err == nil {
		return slog.Any(key, nil)
	}
	return String(key, err.Error())
}

// cut is where to cut b (longer than MaxBytes): at MaxBytes, or up to
// three bytes before, where a UTF-8 sequence starts.
func cut(b []byte) int {
	n := MaxBytes
	for i := n; i > n-utf8.UTFMax && i > 0; i-- {
		if utf8.RuneStart(b[i]) {
			return i
		}
	}
	return n
}

// Default rate of a Handler: per message, a burst of DefaultBurst records,
// then DefaultPerSecond a second.
const (
	DefaultBurst     = 10
	DefaultPerSecond = 1
)

// maxMessages bounds the buckets a Handler keeps: messages are constants
// of the code, so this is never reached unless a message is built from
// what a peer sent, which then all share one bucket.
const maxMessages = 1024

// HandlerOptions configure a Handler. The zero value is the default rate
// on the wall clock.
type HandlerOptions struct {
	Burst     int              // zero: DefaultBurst
	PerSecond float64          // zero: DefaultPerSecond
	Now       func() time.Time // nil: time.Now
}

// Handler passes records to another handler, those that carry a peer's
// bytes (an attribute of Bytes, String or Err) at a bounded rate per
// message: a record held back is counted, and the next one of its message
// that goes through says how many were ("suppressed").
type Handler struct {
	next   slog.Handler
	limits *limits // shared by the handlers WithAttrs and WithGroup make
}

type limits struct {
	burst int
	rate  rate.Limit
	now   func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	lim        *rate.Limiter
	suppressed int
}

// NewHandler returns a Handler in front of next.
func NewHandler(next slog.Handler, opts HandlerOptions) *Handler {
	l := &limits{burst: opts.Burst, rate: rate.Limit(opts.PerSecond), now: opts.Now, buckets: make(map[string]*bucket)}
	if l.burst <= 0 {
		l.burst = DefaultBurst
	}
	if l.rate <= 0 {
		l.rate = DefaultPerSecond
	}
	if l.now == nil {
		l.now = time.Now
	}
	return &Handler{next: next, limits: l}
}

// Limit returns logger with its records that carry a peer's bytes limited
// by a Handler of the default rate, or logger itself when its handler is
// a Handler already.
func Limit(logger *slog.Logger) *slog.Logger {
	if _, ok := logger.Handler().(*Handler); ok {
		return logger
	}
	return slog.New(NewHandler(logger.Handler(), HandlerOptions{}))
}

func (h *Handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &Handler{next: h.next.WithAttrs(attrs), limits: h.limits}
}

func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{next: h.next.WithGroup(name), limits: h.limits}
}

func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	if !carriesPeerBytes(r) {
		return h.next.Handle(ctx, r)
	}
	ok, suppressed := h.limits.admit(r.Message)
	if !ok {
		return nil
	}
	if suppressed > 0 {
		r = r.Clone()
		r.AddAttrs(slog.Int("suppressed", suppressed))
	}
	return h.next.Handle(ctx, r)
}

// admit takes a token of msg's bucket: whether the record goes through,
// and how many of msg's records were held back since the last one did.
func (l *limits) admit(msg string) (ok bool, suppressed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[msg]
	if b == nil {
		if len(l.buckets) >= maxMessages {
			msg = ""
			b = l.buckets[msg]
		}
		if b == nil {
			b = &bucket{lim: rate.NewLimiter(l.rate, l.burst)}
			l.buckets[msg] = b
		}
	}
	if !b.lim.AllowN(l.now(), 1) {
		b.suppressed++
		return false, 0
	}
	suppressed, b.suppressed = b.suppressed, 0
	return true, suppressed
}

// carriesPeerBytes reports whether an attribute of r (in a group too) was
// made by Bytes, String or Err.
func carriesPeerBytes(r slog.Record) bool {
	found := false
	r.Attrs(func(a slog.Attr) bool {
		found = isPeer(a.Value)
		return !found
	})
	return found
}

func isPeer(v slog.Value) bool {
	switch v.Kind() {
	case slog.KindLogValuer:
		_, ok := v.Any().(text)
		return ok
	case slog.KindGroup:
		for _, a := range v.Group() {
			if isPeer(a.Value) {
				return true
			}
		}
	}
	return false
}
