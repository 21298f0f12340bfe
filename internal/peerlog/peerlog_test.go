package peerlog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// TestAttributes: a peer's bytes up to MaxBytes are kept whole; longer
// ones are cut at MaxBytes, or before a UTF-8 sequence that MaxBytes
// would split, and say their size.
func TestAttributes(t *testing.T) {
	long := strings.Repeat("a", MaxBytes-1) + "é" + strings.Repeat("b", 1000) // é spans MaxBytes-1 and MaxBytes
	for _, tt := range []struct {
		name string
		attr slog.Attr
		want string
	}{
		{"short bytes", Bytes("k", []byte("hello")), "hello"},
		{"exactly MaxBytes", String("k", strings.Repeat("x", MaxBytes)), strings.Repeat("x", MaxBytes)},
		{"long bytes", Bytes("k", bytes.Repeat([]byte("x"), 64<<20)), strings.Repeat("x", MaxBytes) + "... (67108864 bytes in all)"},
		{"long string", String("k", strings.Repeat("y", MaxBytes+1)), strings.Repeat("y", MaxBytes) + "... (257 bytes in all)"},
		{"cut before a rune", String("k", long), strings.Repeat("a", MaxBytes-1) + "... (" + fmt.Sprint(len(long)) + " bytes in all)"},
		{"error", Err("k", errors.New(strings.Repeat("e", 300))), strings.Repeat("e", MaxBytes) + "... (300 bytes in all)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.attr.Value.Resolve().String()
			if got != tt.want {
				t.Errorf("value %.80q... (%d bytes), want %.80q... (%d bytes)", got, len(got), tt.want, len(tt.want))
			}
			if !utf8.ValidString(got) {
				t.Errorf("value %q is not UTF-8", got)
			}
		})
	}
	if v := Err("k", nil).Value; v.Any() != nil {
		t.Errorf("Err(nil) = %v, want nil", v)
	}
}

// records is a slog.Handler that keeps each record as "message attr=value
// ...".
type records struct{ got *[]string }

func (r records) Enabled(context.Context, slog.Level) bool { return true }
func (r records) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r records) WithGroup(string) slog.Handler            { return r }
func (r records) Handle(_ context.Context, rec slog.Record) error {
	s := rec.Message
	rec.Attrs(func(a slog.Attr) bool {
		if a.Key == "suppressed" {
			s += fmt.Sprintf(" %s=%v", a.Key, a.Value)
		}
		return true
	})
	*r.got = append(*r.got, s)
	return nil
}

// TestHandlerRate: records that carry a peer's bytes go through at the
// Handler's rate, per message, on an injected clock; the first one after
// a pause says how many were held back; records without a peer's bytes
// all go through, and the loggers With makes share the limit.
func TestHandlerRate(t *testing.T) {
	var got []string
	now := time.Unix(1000, 0)
	h := NewHandler(records{&got}, HandlerOptions{Burst: 3, PerSecond: 1, Now: func() time.Time { return now }})
	log := slog.New(h)
	derived := log.With("server", "s")
	for i := range 10 {
		log.Warn("bad cancel", Bytes("params", []byte("x")))
		derived.Warn("bad cancel", Bytes("params", []byte("x"))) // the same budget
		log.Warn("plain", "i", i)
		if i < 5 {
			log.Warn("bad id", slog.Group("g", String("id", "y")))
		}
	}
	now = now.Add(2 * time.Second)
	log.Warn("bad cancel", Bytes("params", []byte("x")))
	log.Warn("bad id", slog.Group("g", String("id", "y")))

	want := []string{"bad cancel", "bad cancel", "plain", "bad id", "bad cancel", "plain", "bad id", "plain", "bad id"}
	for range 7 {
		want = append(want, "plain")
	}
	want = append(want, "bad cancel suppressed=17", "bad id suppressed=2")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
}

// TestLimit: Limit puts a Handler in front of a logger once.
func TestLimit(t *testing.T) {
	var got []string
	once := Limit(slog.New(records{&got}))
	if _, ok := once.Handler().(*Handler); !ok {
		t.Fatalf("Limit gave a %T", once.Handler())
	}
	if twice := Limit(once); twice != once {
		t.Error("Limit wrapped a limited logger again")
	}
}

// TestRewrite: a rewriting handler (one that replaces secrets) sees the
// peer's text whole, before it is cut: a secret across the cut is found,
// and no part of it is shown. The rewritten attribute still marks its
// record.
func TestRewrite(t *testing.T) {
	const secret = "s3cr3t-token-value"
	line := strings.Repeat("a", MaxBytes-5) + secret + strings.Repeat("b", 1000)
	scrub := func(s string) string { return strings.ReplaceAll(s, secret, "[redacted]") }
	for _, a := range []slog.Attr{String("line", line), Bytes("line", []byte(line))} {
		got, ok := Rewrite(a, scrub)
		if !ok {
			t.Fatal("Rewrite did not take a peer attribute")
		}
		v := got.Value.Resolve().String()
		if strings.Contains(v, secret[:5]) {
			t.Errorf("rewritten value %q shows the start of the secret", v)
		}
		if want := strings.Repeat("a", MaxBytes-5) + "[reda"; !strings.HasPrefix(v, want) {
			t.Errorf("rewritten value %.300q, want it to begin %q", v, want)
		}
		if !isPeer(got.Value) {
			t.Error("the rewritten attribute no longer marks its record")
		}
	}
	if _, ok := Rewrite(slog.String("k", "v"), scrub); ok {
		t.Error("Rewrite took an attribute that holds no peer text")
	}
}
