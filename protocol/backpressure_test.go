package protocol

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// logRecords is a slog.Handler that keeps the messages of the records it
// gets, and signals each one whose message contains watch.
type logRecords struct {
	watch   string
	matched chan struct{}
	mu      sync.Mutex
	msgs    []string
}

func newLogRecords(watch string) *logRecords {
	return &logRecords{watch: watch, matched: make(chan struct{}, 1)}
}

func (l *logRecords) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecords) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logRecords) WithGroup(string) slog.Handler            { return l }
func (l *logRecords) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	l.msgs = append(l.msgs, r.Message)
	l.mu.Unlock()
	if l.watch != "" && strings.Contains(r.Message, l.watch) {
		select {
		case l.matched <- struct{}{}:
		default:
		}
	}
	return nil
}

// count is how many records so far have a message containing s.
func (l *logRecords) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, m := range l.msgs {
		if strings.Contains(m, s) {
			n++
		}
	}
	return n
}

// TestPeerThatDoesNotRead: a peer writes requests and does not read the
// answers. The Conn stops reading once what waits to be written passes its
// limit (frames or bytes), says so once, and what waits (frames, bytes,
// goroutines) stays bounded whatever the number of requests; once the peer
// reads, every answer arrives. The handler answers each request on a
// goroutine of its own, as the sidecar does. (A peer that wrote 200k
// requests this way grew the sidecar to 1.5 GB, its answers each held by a
// goroutine waiting to write.)
func TestPeerThatDoesNotRead(t *testing.T) {
	for _, tt := range []struct {
		name     string
		requests int
		result   json.RawMessage
		bound    int // requests read while the peer does not read, at most
	}{
		// Reading stops with the outbox full, or with maxOwed answers
		// owed: one frame being written, what fills the outbox, and the
		// answers owed.
		{"many small answers", 1 + maxQueuedFrames + maxOwed + 1024, json.RawMessage(`{"ok":true}`), 1 + maxQueuedFrames + maxOwed},
		// Answers of 24 KiB fill the byte limit before the frame limit.
		{"large answers", 1 + maxQueuedBytes/(24<<10) + maxOwed + 512, json.RawMessage(`"` + strings.Repeat("r", 24<<10) + `"`), 1 + maxQueuedBytes/(24<<10) + maxOwed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			base := runtime.NumGoroutine()
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			logs := newLogRecords("does not read")
			c := NewConn(inR, outW, ConnOptions{Logger: slog.New(logs)})
			var handled, returned atomic.Int64
			returns := make(chan struct{}, tt.requests)
			h := HandlerFunc(func(_ context.Context, req *Request) {
				if req.IsNotification() {
					return
				}
				handled.Add(1)
				go func() {
					if err := c.Reply(req.ID, tt.result); err != nil {
						t.Errorf("reply %s: %v", req.ID, err)
					}
					returned.Add(1)
					returns <- struct{}{}
				}()
			})
			served := make(chan error, 1)
			go func() { served <- c.Serve(context.Background(), h) }()
			wroteAll := make(chan struct{})
			go func() {
				defer close(wroteAll)
				for i := range tt.requests {
					if _, err := io.WriteString(inW, frameOf(request(fmt.Sprint(i+1), "echo"))); err != nil {
						t.Errorf("writing request %d: %v", i+1, err)
						return
					}
				}
			}()

			hangGuard := time.NewTimer(2 * time.Minute)
			defer hangGuard.Stop()
			select {
			case <-logs.matched:
			case <-wroteAll: // every request was read: reading never paused
			case <-hangGuard.C:
				t.Fatal("reading neither paused nor took every request")
			}
			read := int(handled.Load())
			if read > tt.bound {
				t.Errorf("%d of %d requests read while the peer does not read, want at most %d (%d goroutines, %d before)",
					read, tt.requests, tt.bound, runtime.NumGoroutine(), base)
			} else {
				// Every handler but the one writing (to a peer that does
				// not read) has returned: none waits to write.
				for returned.Load() < handled.Load()-1 {
					select {
					case <-returns:
					case <-hangGuard.C:
						t.Fatalf("%d of %d answers still wait in Reply", handled.Load()-returned.Load(), handled.Load())
					}
				}
				if g := runtime.NumGoroutine(); g > base+10 {
					t.Errorf("%d goroutines with %d requests read, %d before: goroutines grow with the requests", g, read, base)
				}
				frames, size := c.out.out.Pending()
				if maxBytes := int64(maxQueuedBytes + (maxOwed+1)*(len(tt.result)+64)); frames > tt.bound || size > maxBytes {
					t.Errorf("%d frames of %d bytes wait, want at most %d of %d", frames, size, tt.bound, maxBytes)
				}
				if n := logs.count("does not read"); n != 1 {
					t.Errorf("%d records of the pause, want 1", n)
				}
			}

			// The peer reads now: every answer arrives, once.
			seen := make(map[string]int)
			br := bufio.NewReader(outR)
			var body []byte
			for len(seen) < tt.requests {
				var err error
				body, err = readFrameBody(br, body) // its JSON is not checked: the test reads 50 MiB
				if err != nil {
					t.Fatalf("after %d answers: %v", len(seen), err)
				}
				m := scanMembers(body) // the id only: a large body is not decoded
				if m.id == nil {
					t.Fatalf("answer without an id: %.100s", body)
				}
				seen[string(m.id)]++
			}
			for id, n := range seen {
				if n != 1 {
					t.Errorf("id %s answered %d times", id, n)
				}
			}
			<-wroteAll
			inW.Close()
			if err := <-served; err != nil {
				t.Errorf("Serve: %v", err)
			}
			if n := logs.count("reads again"); n < 1 {
				t.Errorf("%d records of reading resumed, want at least 1", n)
			}
		})
	}
}
