package redact

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/mcp-sidecar/mcp-sidecar/internal/peerlog"
	"log/slog"
)

// Handler is h with the secrets of s replaced in every record: its
// message and its attributes' values (strings, errors and anything else
// that prints, in groups too). A logger given to code that logs what a
// server wrote (its stderr lines, its errors) goes through it.
func Handler(h slog.Handler, s *Secrets) slog.Handler {
	if s == nil {
		return h
	}
	return &scrubHandler{h: h, s: s}
}

type scrubHandler struct {
	h slog.Handler
	s *Secrets
}

func (h *scrubHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.h.Enabled(ctx, l) }

func (h *scrubHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, h.s.String(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.h.Handle(ctx, out)
}

func (h *scrubHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	scrubbed := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		scrubbed[i] = h.attr(a)
	}
	return &scrubHandler{h: h.h.WithAttrs(scrubbed), s: h.s}
}

func (h *scrubHandler) WithGroup(name string) slog.Handler {
	return &scrubHandler{h: h.h.WithGroup(name), s: h.s}
}

// attr is a with the secrets replaced in its value.
func (h *scrubHandler) attr(a slog.Attr) slog.Attr {
	// Peer text is scrubbed whole before it is cut for the log, so that a
	// secret across the cut is found, and it stays marked for the rate
	// limit of peerlog.Handler.
	if a2, ok := peerlog.Rewrite(a, h.s.String); ok {
		return a2
	}
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.s.String(v.String()))
	case slog.KindGroup:
		group := v.Group()
		out := make([]slog.Attr, len(group))
		for i, g := range group {
			out[i] = h.attr(g)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(out...)}
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return slog.String(a.Key, h.s.String(x.Error()))
		case json.RawMessage:
			return slog.Any(a.Key, h.s.JSON(x))
		case []byte:
			return slog.String(a.Key, h.s.String(string(x)))
		}
		return slog.String(a.Key, h.s.String(fmt.Sprint(v.Any())))
	}
	return slog.Attr{Key: a.Key, Value: v}
}
