package sidecar

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mcp-sidecar/mcp-sidecar/config"
)

// One question per input at a time: callers that need it meanwhile wait
// for its answer; a value given is kept, a question that failed is not;
// a waiter whose asker's request ended asks in its turn.
func TestInputStore(t *testing.T) {
	in := config.Input{ID: "token", File: "/p/.vscode/mcp.json"}
	var st inputStore
	var asked atomic.Int32
	release := make(chan struct{})
	started := make(chan struct{})
	ask := func(ctx context.Context) (string, error) {
		if asked.Add(1) == 1 {
			close(started)
		}
		select {
		case <-release:
			return "tok-123456789", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	var wg sync.WaitGroup
	got := make([]string, 3)
	wg.Go(func() { got[0], _ = st.value(context.Background(), in, ask) })
	<-started
	for i := 1; i < 3; i++ {
		wg.Go(func() { got[i], _ = st.value(context.Background(), in, ask) })
	}
	close(release)
	wg.Wait()
	for i, v := range got {
		if v != "tok-123456789" {
			t.Errorf("caller %d got %q", i, v)
		}
	}
	if n := asked.Load(); n != 1 {
		t.Fatalf("asked %d times", n)
	}
	before := asked.Load()
	if v, err := st.value(context.Background(), in, ask); err != nil || v != "tok-123456789" || asked.Load() != before {
		t.Errorf("a given value was asked again: %q, %v", v, err)
	}

	// A failure is not kept.
	other := config.Input{ID: "other", File: in.File}
	refuse := errors.New("cancelled")
	if _, err := st.value(context.Background(), other, func(context.Context) (string, error) { return "", refuse }); err != refuse {
		t.Fatalf("err %v", err)
	}
	if v, err := st.value(context.Background(), other, func(context.Context) (string, error) { return "v-987654321", nil }); err != nil || v != "v-987654321" {
		t.Errorf("after a failure: %q, %v", v, err)
	}

	// The asker's request ends: a waiter asks in its turn.
	third := config.Input{ID: "third", File: in.File}
	askerCtx, cancel := context.WithCancel(context.Background())
	asking := make(chan struct{})
	var askerErr error
	var w sync.WaitGroup
	w.Go(func() {
		_, askerErr = st.value(askerCtx, third, func(ctx context.Context) (string, error) {
			close(asking)
			<-ctx.Done()
			return "", ctx.Err()
		})
	})
	<-asking
	var waiterVal string
	waiterAsked := make(chan struct{})
	w.Go(func() {
		waiterVal, _ = st.value(context.Background(), third, func(context.Context) (string, error) {
			close(waiterAsked)
			return "w-555555555", nil
		})
	})
	cancel()
	w.Wait()
	if !errors.Is(askerErr, context.Canceled) || waiterVal != "w-555555555" {
		t.Errorf("asker %v, waiter %q", askerErr, waiterVal)
	}
	select {
	case <-waiterAsked:
	default:
		t.Error("the waiter did not ask")
	}
}
