package protocol

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestPeerBehindStillAnswered: a peer that does not read its answers, and
// then answers a call of the Conn and cancels one of its own requests, is
// heard: the Conn reads on while the peer is behind, takes the response
// and the cancellation at once, and keeps the peer's new requests waiting
// until it reads. (Reading stopped whole: the call never ended, and a
// peer that blocks writing while its input is not read never read again.)
func TestPeerBehindStillAnswered(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	logs := newLogRecords("does not read")
	c := NewConn(inR, outW, ConnOptions{Logger: slog.New(logs)})
	result := json.RawMessage(`"` + strings.Repeat("r", 24<<10) + `"`)
	var mu sync.Mutex
	handled := map[string]bool{}
	h := HandlerFunc(func(_ context.Context, req *Request) {
		if req.IsNotification() {
			return
		}
		mu.Lock()
		handled[string(req.ID)] = true
		mu.Unlock()
		go c.Reply(req.ID, result)
	})
	served := make(chan error, 1)
	go func() { served <- c.Serve(context.Background(), h) }()
	defer func() {
		inW.Close()
		outR.Close()
		c.Close()
		<-served
	}()

	// The Conn's call goes out first, and the peer reads it (its id is
	// 1); then it reads nothing more for a while.
	called := make(chan error, 1)
	go func() {
		_, err := c.Call(context.Background(), "ask", nil)
		called <- err
	}()
	br := bufio.NewReader(outR)
	if body, err := readFrameBody(br, nil); err != nil || scanMembers(body).method == nil {
		t.Fatalf("the call's frame: %s, %v", body, err)
	}

	// The peer writes requests until the Conn holds them because the peer
	// is behind, with its outbox full (so the pause lasts: the peer reads
	// nothing). The state is read, not the log, which is rate-limited and
	// may come late on a loaded machine, while the peer wrote on to the
	// 256 requests that may wait. Each request is 1 KiB: the Conn reads
	// one write at a time, so the peer is at most a request or two ahead
	// of the state it sees.
	pad := strings.Repeat("q", 1<<10)
	written := 0
	for !(c.hold.active.Load() && c.out.room() != nil) {
		written++
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"echo","params":{"pad":%q}}`, written, pad)
		if _, err := io.WriteString(inW, frameOf(body)); err != nil {
			t.Fatal(err)
		}
	}
	// The pause is logged just after it begins, on the read loop.
	select {
	case <-logs.matched:
	case <-time.After(30 * time.Second):
		t.Error("the pause was not logged")
	}
	// Now: one more request, the answer to the call, and the
	// cancellation of that last request; the peer has read nothing yet.
	wrote := make(chan error, 1)
	go func() {
		_, err := io.WriteString(inW, frameOf(request(`"last"`, "echo"))+
			frameOf(`{"jsonrpc":"2.0","id":1,"result":"answered"}`)+
			frameOf(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":"last"}}`))
		wrote <- err
	}()
	// The Conn reads all three while the peer still reads nothing: the
	// write ends. (The call itself may not return yet: the goroutine that
	// made it may be the one writing the outbox's answers to the peer,
	// which waits for the peer to read.)
	hangGuard := time.NewTimer(30 * time.Second)
	defer hangGuard.Stop()
	select {
	case err := <-wrote:
		if err != nil {
			t.Fatal(err)
		}
	case <-hangGuard.C:
		t.Fatal("the answer and the cancellation were never read: the Conn stopped reading the peer that does not read")
	}

	// The peer reads now: every request is answered once, the cancelled
	// one -32800 without reaching the Handler.
	answers := map[string]int{}
	var lastAnswer string
	for len(answers) < written+1 {
		body, err := readFrameBody(br, nil)
		if err != nil {
			t.Fatalf("after %d answers: %v", len(answers), err)
		}
		m := scanMembers(body)
		answers[string(m.id)]++
		if string(m.id) == `"last"` {
			lastAnswer = string(m.errv)
		}
	}
	for id, n := range answers {
		if n != 1 {
			t.Errorf("request %s answered %d times", id, n)
		}
	}
	select {
	case err := <-called:
		if err != nil {
			t.Errorf("the call: %v", err)
		}
	case <-hangGuard.C:
		t.Fatal("the call never returned after the peer read")
	}
	if !strings.Contains(lastAnswer, "-32800") {
		t.Errorf("the cancelled request's answer: error %s, want -32800", lastAnswer)
	}
	mu.Lock()
	defer mu.Unlock()
	if handled[`"last"`] {
		t.Error("the request cancelled while it waited reached the Handler")
	}
}
