package peoplecli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
)

// peopleLog is the in-process sidecar's log handler for the commands for
// people: each record is one line in words ("warning: server "x": ..."),
// not slog's key=value, and while a live display is drawn the lines wait
// and are printed after it, so that they never break it.
type peopleLog struct {
	mu      sync.Mutex
	w       io.Writer
	held    bool
	pending []string
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

func (l *peopleLog) Enabled(_ context.Context, level slog.Level) bool { return level >= slog.LevelWarn }

func (l *peopleLog) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(strings.ToLower(r.Level.String()))
	b.WriteString(": ")
	var server string
	var details []string
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "server":
			server = a.Value.String()
		case "session":
		default:
			details = append(details, fmt.Sprintf("%s: %s", a.Key, a.Value))
		}
		return true
	})
	if server != "" && !strings.Contains(r.Message, fmt.Sprintf("%q", server)) {
		fmt.Fprintf(&b, "server %q: ", server)
	}
	b.WriteString(r.Message)
	if len(details) > 0 {
		b.WriteString(" (" + strings.Join(details, "; ") + ")")
	}
	b.WriteByte('\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held {
		l.pending = append(l.pending, b.String())
		return nil
	}
	_, err := io.WriteString(l.w, b.String())
	return err
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
