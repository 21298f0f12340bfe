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
	"testing"
	"time"
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
// encodes, whose buffer encoding/json pools), the Conn returns their
// memory to the OS: a release is scheduled a second after the first large
// frame (none for small ones), once however many large frames follow, the
// next one no sooner than ten seconds after it; and once it ran, the
// memory the process holds is back within half a payload of where it
// started. (Four 60 MB results left a sidecar at 180 MB for minutes.)
func TestMemoryReturnedAfterLargeFrames(t *testing.T) {
	const payload = 32 << 20
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	read := make(chan struct{})
	go func() { io.Copy(io.Discard, outR); close(read) }() // the peer reads everything, keeps nothing
	c := NewConn(inR, outW, ConnOptions{ReleaseMemoryAbove: payload / 2})
	type release struct {
		after time.Duration
		run   func()
	}
	scheduled := make(chan release, 10)
	now := time.Unix(1000, 0)
	c.rel.now = func() time.Time { return now }
	c.rel.after = func(d time.Duration, f func()) func() bool {
		scheduled <- release{d, f}
		return func() bool { return true }
	}
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
	if r.after != releaseDelay {
		t.Errorf("release scheduled after %v, want %v", r.after, releaseDelay)
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
	now = now.Add(time.Second)
	send(20, "raw")
	if r := <-scheduled; r.after != releaseEvery-time.Second {
		t.Errorf("next release scheduled after %v, want %v", r.after, releaseEvery-time.Second)
	}
	inW.Close()
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
	outW.Close()
	<-read
}
