package protocol

import (
	"context"
	"errors"
	"io"
	"testing"
)

// watchRecord tells ended which request's context ended, and why.
type watchRecord struct {
	id    string
	ended chan<- watched
}

type watched struct {
	id    string
	cause error
}

func (w watchRecord) RequestEnded(cause error) { w.ended <- watched{w.id, cause} }

// TestWatch: a watched request's watcher is told once when the peer
// cancels it or Serve's context ends, never once it was answered; Watch
// refuses a request not in flight, one watched already, and one whose
// context ended.
func TestWatch(t *testing.T) {
	hostR, hostW := io.Pipe()
	defer hostW.Close()
	c := NewConn(hostR, io.Discard, ConnOptions{})
	ended := make(chan watched, 10)
	watchedOK := make(chan bool, 10)
	serveCtx, stop := context.WithCancelCause(context.Background())
	served := make(chan struct{})
	go func() {
		defer close(served)
		c.Serve(serveCtx, HandlerFunc(func(ctx context.Context, req *Request) {
			if req.IsNotification() {
				return
			}
			// On the read loop, as the sidecar's tools/call.
			watchedOK <- c.Watch(req.ID, watchRecord{string(req.ID), ended})
			if req.Method == "twice" {
				watchedOK <- c.Watch(req.ID, watchRecord{"again", ended})
			}
		}))
	}()
	send := func(bodies ...string) {
		t.Helper()
		for _, b := range bodies {
			if _, err := io.WriteString(hostW, frameOf(b)); err != nil {
				t.Fatal(err)
			}
		}
	}
	cancelOf := func(id string) string {
		return `{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":` + id + `}}`
	}

	if c.Watch([]byte("7"), watchRecord{"7", ended}) {
		t.Error("Watch of a request not in flight reported true")
	}
	send(request("1", "hold"), cancelOf("1"))
	if !<-watchedOK {
		t.Fatal("Watch of a request in flight reported false")
	}
	if got := <-ended; got.id != "1" || !errors.Is(got.cause, ErrRequestCancelled) {
		t.Errorf("told %s with %v, want 1 with ErrRequestCancelled", got.id, got.cause)
	}

	// Answered, then cancelled: not told. A later cancel of another
	// request is what the watcher hears next.
	send(request("2", "twice"))
	if !<-watchedOK || <-watchedOK {
		t.Error("Watch twice of one request: want true, then false")
	}
	if err := c.Reply([]byte("2"), "done"); err != nil {
		t.Fatal(err)
	}
	send(cancelOf("2"), request("3", "hold"))
	<-watchedOK

	// Serve's context ends: the request in flight is told, with its cause.
	cause := errors.New("stopping")
	stop(cause)
	<-served
	if got := <-ended; got.id != "3" || !errors.Is(got.cause, cause) {
		t.Errorf("told %s with %v, want 3 with %v", got.id, got.cause, cause)
	}
	select {
	case got := <-ended:
		t.Errorf("told again: %v", got)
	default:
	}
	c.mu.Lock()
	c.numIDs["4"] = inflight{id: []byte("4"), cancel: func(error) {}} // read after the end
	c.mu.Unlock()
	if c.Watch([]byte("4"), watchRecord{"4", ended}) {
		t.Error("Watch after Serve's context ended reported true")
	}
}
