package protocol

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/internal/memrelease"
)

// retained is the memory the process holds from the OS for Go (what it
// mapped, less what it returned): about its resident size.
func retained() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64()) - int64(s[1].Value.Uint64())
}

// TestMemoryReturnedAfterLargeFrames: after four replies of 32 MiB, each
// made afresh as a server's answer is (raw bytes, or a value the Conn
// encodes, whose buffer encoding/json pools), a releaser told of the
// Conn's frames (ConnOptions.FrameSize) returns their memory to the OS:
// a release is scheduled a second after the first large frame (none for
// small ones), once however many large frames follow, the next one no
// sooner than ten seconds after it; and once it ran, the memory the
// process holds is back within half a payload of where it started: the
// Conn keeps nothing of a large frame (its buffer pool included). (Four
// 60 MB results left a sidecar at 180 MB for minutes.)
func TestMemoryReturnedAfterLargeFrames(t *testing.T) {
	const payload = 32 << 20
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	read := make(chan struct{})
	go func() { io.Copy(io.Discard, outR); close(read) }() // the peer reads everything, keeps nothing
	type release struct {
		after time.Duration
		run   func()
	}
	scheduled := make(chan release, 10)
	var mu sync.Mutex // guards now
	now := time.Unix(1000, 0)
	rel := memrelease.New(memrelease.Options{
		Above: payload / 2,
		Now: func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			return now
		},
		After: func(d time.Duration, f func()) func() bool {
			scheduled <- release{d, f}
			return func() bool { return true }
		},
	})
	defer rel.Close()
	c := NewConn(inR, outW, ConnOptions{FrameSize: rel.Note})
	replied := make(chan error, 8)
	h := HandlerFunc(func(_ context.Context, req *Request) {
		if req.IsNotification() {
			return
		}
		go func() {
			// A new answer each time, as a server's is: its bytes as
			// they came (raw), or a value the Conn encodes.
			switch req.Method {
			case "raw":
				result := bytes.Repeat([]byte{'r'}, payload)
				result[0], result[payload-1] = '"', '"'
				replied <- c.Reply(req.ID, json.RawMessage(result))
			case "value":
				replied <- c.Reply(req.ID, map[string]string{"text": strings.Repeat("v", payload)})
			default:
				replied <- c.Reply(req.ID, "small")
			}
		}()
	})
	served := make(chan error, 1)
	go func() { served <- c.Serve(context.Background(), h) }()
	send := func(id int, method string) {
		t.Helper()
		if _, err := io.WriteString(inW, frameOf(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q}`, id, method))); err != nil {
			t.Fatal(err)
		}
		if err := <-replied; err != nil {
			t.Fatal(err)
		}
	}

	debug.FreeOSMemory()
	before := retained()
	for i := range 3 {
		send(i+1, "small")
	}
	if len(scheduled) != 0 {
		t.Fatal("a release scheduled after small frames")
	}
	for i, kind := range []string{"raw", "value", "raw", "value"} {
		send(10+i, kind)
	}
	kept := retained()
	r := <-scheduled
	if len(scheduled) != 0 {
		t.Errorf("%d more releases scheduled, want one for the four frames", len(scheduled))
	}
	if r.after != memrelease.Delay {
		t.Errorf("release scheduled after %v, want %v", r.after, memrelease.Delay)
	}
	r.run()
	after := retained()
	t.Logf("memory held: %d MiB before, %d MiB after four replies of %d MiB, %d MiB once returned",
		before>>20, kept>>20, payload>>20, after>>20)
	if after-before > payload/2 {
		t.Errorf("%d MiB more held after the release than before four replies of %d MiB, want less than %d MiB",
			(after-before)>>20, payload>>20, payload>>21)
	}

	// The next large frame: a release no sooner than releaseEvery after
	// this one.
	mu.Lock()
	now = now.Add(time.Second)
	mu.Unlock()
	send(20, "raw")
	if r := <-scheduled; r.after != memrelease.Every-time.Second {
		t.Errorf("next release scheduled after %v, want %v", r.after, memrelease.Every-time.Second)
	}
	inW.Close()
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
	outW.Close()
	<-read
}

// writtenWriter records when a Write has returned.
type writtenWriter struct {
	w       io.Writer
	written atomic.Int64 // bytes whose Write returned
}

func (w *writtenWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	w.written.Add(int64(n))
	return n, err
}

// TestFrameSizeAfterWrite: ConnOptions.FrameSize hears of a large frame
// the Conn writes once it was written, whichever way it was written (raw
// without a copy, encoded, queued behind another frame): the payload's
// memory is not released while the writer still holds it.
func TestFrameSizeAfterWrite(t *testing.T) {
	const payload = 4 << 20
	tests := []struct {
		name   string
		method string
	}{
		{"raw", "raw"},
		{"encoded", "value"},
		{"queued behind another", "queued"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			w := &writtenWriter{w: outW}
			read := make(chan struct{})
			go func() { io.Copy(io.Discard, outR); close(read) }()
			// Each large frame's size with the bytes written when it was
			// told.
			told := make(chan int64, 16)
			c := NewConn(inR, w, ConnOptions{FrameSize: func(n int) {
				if n >= payload {
					told <- w.written.Load()
				}
			}})
			replied := make(chan error, 2)
			h := HandlerFunc(func(_ context.Context, req *Request) {
				go func() {
					result := bytes.Repeat([]byte{'r'}, payload)
					result[0], result[payload-1] = '"', '"'
					switch tt.method {
					case "raw":
						replied <- c.Reply(req.ID, json.RawMessage(result))
					case "value":
						replied <- c.Reply(req.ID, map[string]string{"text": string(result)})
					case "queued":
						// A notification of the same size goes first.
						replied <- c.Notify("big", map[string]string{"text": string(result)})
						replied <- c.Reply(req.ID, json.RawMessage(result))
					}
				}()
			})
			served := make(chan error, 1)
			go func() { served <- c.Serve(context.Background(), h) }()
			if _, err := io.WriteString(inW, frameOf(`{"jsonrpc":"2.0","id":1,"method":"m"}`)); err != nil {
				t.Fatal(err)
			}
			frames := 1
			if tt.method == "queued" {
				frames = 2
			}
			for range frames {
				if err := <-replied; err != nil {
					t.Fatal(err)
				}
			}
			inW.Close()
			if err := <-served; err != nil {
				t.Errorf("Serve: %v", err)
			}
			if !c.Flush(30 * time.Second) {
				t.Fatal("frames not written")
			}
			outW.Close()
			<-read
			// The last word on the last frame comes once every byte of it
			// was written.
			var last int64 = -1
			for len(told) > 0 {
				last = <-told
			}
			if total := w.written.Load(); last != total {
				t.Errorf("FrameSize last told of a large frame with %d of %d bytes written, want all", last, total)
			}
		})
	}
}
