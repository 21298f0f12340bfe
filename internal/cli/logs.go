package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
)

// peopleLog is the in-process sidecar's log handler for the commands for
// people: each record is one line in words ("warning: server "x" printed
// ..."), not slog's key=value with its attribute names, and while a live
// display is drawn the lines wait and are printed after it, so that they
// never break it.
type peopleLog struct {
	mu      sync.Mutex
	w       io.Writer
	held    bool
	pending []string
	// quietStdout drops the records of a server's non-JSON stdout lines,
	// for a command that reports them itself (doctor's Warnings).
	quietStdout bool
}

func newPeopleLog(w io.Writer) *peopleLog { return &peopleLog{w: w} }

// hold keeps lines back until release.
func (l *peopleLog) hold() {
	l.mu.Lock()
	l.held = true
	l.mu.Unlock()
}

// release prints the lines held back and lets later ones through.
func (l *peopleLog) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held = false
	for _, line := range l.pending {
		io.WriteString(l.w, line)
	}
	l.pending = nil
}

// line prints one line of the command's own (--verbose), held back as
// records are while a live display is drawn.
func (l *peopleLog) line(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held {
		l.pending = append(l.pending, s)
		return
	}
	io.WriteString(l.w, s)
}

// setQuietStdout drops the records of non-JSON stdout lines.
func (l *peopleLog) setQuietStdout() {
	l.mu.Lock()
	l.quietStdout = true
	l.mu.Unlock()
}

func (l *peopleLog) Enabled(_ context.Context, level slog.Level) bool { return level >= slog.LevelWarn }

// The messages of mcpclient's records of a server's non-JSON stdout
// lines (mcpclient/linereader.go): one per line within a rate, and a
// count of those left out when the connection closes.
const (
	msgSkippedLine  = "skipped a non-JSON line on the server's stdout"
	msgSkippedLines = "non-JSON lines skipped on the server's stdout"
)

func (l *peopleLog) Handle(_ context.Context, r slog.Record) error {
	attrs := map[string]slog.Value{}
	var order []string
	r.Attrs(func(a slog.Attr) bool {
		if _, dup := attrs[a.Key]; !dup {
			order = append(order, a.Key)
		}
		attrs[a.Key] = a.Value.Resolve() // a peer's text is a LogValuer (internal/peerlog)
		return true
	})
	stdoutRecord := r.Message == msgSkippedLine || r.Message == msgSkippedLines
	l.mu.Lock()
	quiet := l.quietStdout
	l.mu.Unlock()
	if stdoutRecord && quiet {
		return nil
	}
	line := describeRecord(r, attrs, order)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held {
		l.pending = append(l.pending, line)
		return nil
	}
	_, err := io.WriteString(l.w, line)
	return err
}

// describeRecord renders a record in words: its level, the server it is
// about, its message and its attributes as phrases, never as key=value
// (slog's attribute names are for programs).
func describeRecord(r slog.Record, attrs map[string]slog.Value, order []string) string {
	level := "warning"
	if r.Level >= slog.LevelError {
		level = "error"
	}
	server := ""
	if v, ok := attrs["server"]; ok {
		server = v.String()
	}
	count := func(key string) int64 {
		if v, ok := attrs[key]; ok && v.Kind() == slog.KindInt64 {
			return v.Int64()
		}
		return 0
	}
	var b strings.Builder
	b.WriteString(level + ": ")
	switch r.Message {
	case msgSkippedLine:
		fmt.Fprintf(&b, "server %q printed a line on stdout that is not JSON-RPC (skipped): %s", server, attrs["line"])
		if n := count("not_logged_before"); n > 0 {
			fmt.Fprintf(&b, " (%s before it not shown)", plural(n, "more such line"))
		}
	case msgSkippedLines:
		fmt.Fprintf(&b, "server %q printed %s on stdout that are not JSON-RPC in all, %d of them not shown", server, plural(count("skipped"), "line"), count("not_logged"))
	default:
		if server != "" && !strings.Contains(r.Message, fmt.Sprintf("%q", server)) {
			fmt.Fprintf(&b, "server %q: ", server)
		}
		b.WriteString(r.Message)
		var details []string
		for _, key := range order {
			switch key {
			case "server", "session":
			case "err", "reason", "why":
				b.WriteString(": " + attrs[key].String())
			default:
				details = append(details, strings.ReplaceAll(key, "_", " ")+" "+attrs[key].String())
			}
		}
		if len(details) > 0 {
			b.WriteString(" (" + strings.Join(details, ", ") + ")")
		}
	}
	b.WriteByte('\n')
	return b.String()
}

// plural is "1 line" or "n lines".
func plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func (l *peopleLog) WithAttrs(attrs []slog.Attr) slog.Handler { return &attrHandler{l, attrs} }
func (l *peopleLog) WithGroup(string) slog.Handler            { return l }

// attrHandler is peopleLog with attributes bound by Logger.With.
type attrHandler struct {
	l     *peopleLog
	attrs []slog.Attr
}

func (h *attrHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.l.Enabled(ctx, level)
}

func (h *attrHandler) Handle(ctx context.Context, r slog.Record) error {
	r = r.Clone()
	r.AddAttrs(h.attrs...)
	return h.l.Handle(ctx, r)
}

func (h *attrHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &attrHandler{h.l, append(append([]slog.Attr{}, h.attrs...), attrs...)}
}
func (h *attrHandler) WithGroup(string) slog.Handler { return h }
