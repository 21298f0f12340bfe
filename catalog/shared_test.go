package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// safety bounds a test that would otherwise hang; it is never what a test
// measures.
const safety = 20 * time.Second

func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(safety):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// waitCounter counts SharedListings.OnWait calls and lets a test block
// until a number of callers are waiting.
type waitCounter struct {
	mu      sync.Mutex
	n       int
	changed chan struct{}
}

func newWaitCounter(s *SharedListings) *waitCounter {
	w := &waitCounter{changed: make(chan struct{})}
	s.OnWait = func(string) {
		w.mu.Lock()
		w.n++
		close(w.changed)
		w.changed = make(chan struct{})
		w.mu.Unlock()
	}
	return w
}

// until blocks until at least n waits were seen.
func (w *waitCounter) until(ctx context.Context, n int) error {
	for {
		w.mu.Lock()
		got, ch := w.n, w.changed
		w.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

type listOutcome struct {
	who    int
	tools  []string
	shared bool
	err    error
}

func TestSharedListingsOneListForConcurrentCallers(t *testing.T) {
	s := NewSharedListings()
	waits := newWaitCounter(s)
	var calls atomic.Int32
	const callers = 8
	out := make(chan listOutcome, callers)
	for i := range callers {
		go func() {
			tools, shared, err := s.List(context.Background(), "k", func(ctx context.Context) ([]json.RawMessage, error) {
				calls.Add(1)
				// Hold the listing until every other caller waits on it.
				wctx, cancel := context.WithTimeout(ctx, safety)
				defer cancel()
				if err := waits.until(wctx, callers-1); err != nil {
					return nil, err
				}
				return raws(`{"name":"a"}`, `{"name":"b"}`), nil
			})
			out <- listOutcome{i, rawStrings(tools), shared, err}
		}()
	}
	sharedCount := 0
	for range callers {
		o := recv(t, out, "a caller")
		if o.err != nil {
			t.Fatalf("caller %d: %v", o.who, o.err)
		}
		if diff := cmp.Diff([]string{`{"name":"a"}`, `{"name":"b"}`}, o.tools); diff != "" {
			t.Errorf("caller %d tools (-want +got):\n%s", o.who, diff)
		}
		if o.shared {
			sharedCount++
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("list called %d times, want 1", n)
	}
	if sharedCount != callers-1 {
		t.Errorf("%d shared results, want %d", sharedCount, callers-1)
	}
}

// TestSharedListingsLeaderFails covers a leader whose listing fails and one
// whose ctx is cancelled mid-listing: the waiters do not inherit it, one of
// them lists again and shares with the rest.
func TestSharedListingsLeaderFails(t *testing.T) {
	for _, mode := range []string{"error", "cancel", "cancel ignored by list", "panic"} {
		t.Run(mode, func(t *testing.T) {
			s := NewSharedListings()
			waits := newWaitCounter(s)
			var calls atomic.Int32
			const waiters = 4
			boom := errors.New("boom")
			leaderCtx, cancelLeader := context.WithCancel(context.Background())
			defer cancelLeader()
			release := make(chan struct{}) // for the leader whose list ignores ctx

			leaderOut := make(chan listOutcome, 1)
			leaderStarted := make(chan struct{})
			go func() {
				defer func() {
					if r := recover(); r != nil {
						leaderOut <- listOutcome{who: -1, err: errors.New("panicked")}
					}
				}()
				tools, shared, err := s.List(leaderCtx, "k", func(ctx context.Context) ([]json.RawMessage, error) {
					calls.Add(1)
					close(leaderStarted)
					wctx, cancel := context.WithTimeout(context.Background(), safety)
					defer cancel()
					if err := waits.until(wctx, waiters); err != nil {
						return nil, err
					}
					switch mode {
					case "error":
						return nil, boom
					case "panic":
						panic("list panicked")
					case "cancel ignored by list":
						cancelLeader()
						<-release
						return raws(`{"name":"late"}`), nil
					}
					cancelLeader()
					<-ctx.Done()
					return nil, ctx.Err()
				})
				leaderOut <- listOutcome{-1, rawStrings(tools), shared, err}
			}()
			<-leaderStarted

			out := make(chan listOutcome, waiters)
			for i := range waiters {
				go func() {
					tools, shared, err := s.List(context.Background(), "k", func(ctx context.Context) ([]json.RawMessage, error) {
						calls.Add(1)
						// The new leader holds until the other waiters
						// have joined it (waiters initial waits + their
						// second waits).
						wctx, cancel := context.WithTimeout(ctx, safety)
						defer cancel()
						if err := waits.until(wctx, waiters+waiters-1); err != nil {
							return nil, err
						}
						return raws(`{"name":"fresh"}`), nil
					})
					out <- listOutcome{i, rawStrings(tools), shared, err}
				}()
			}
			sharedCount := 0
			for range waiters {
				o := recv(t, out, "a waiter")
				if o.err != nil {
					t.Fatalf("waiter %d inherited: %v", o.who, o.err)
				}
				if diff := cmp.Diff([]string{`{"name":"fresh"}`}, o.tools); diff != "" {
					t.Errorf("waiter %d (-want +got):\n%s", o.who, diff)
				}
				if o.shared {
					sharedCount++
				}
			}
			if sharedCount != waiters-1 {
				t.Errorf("%d shared results, want %d", sharedCount, waiters-1)
			}
			close(release)
			lo := recv(t, leaderOut, "the leader")
			switch mode {
			case "error":
				if !errors.Is(lo.err, boom) {
					t.Errorf("leader err = %v, want boom", lo.err)
				}
			case "cancel":
				if !errors.Is(lo.err, context.Canceled) {
					t.Errorf("leader err = %v, want context.Canceled", lo.err)
				}
			case "panic":
				if lo.err == nil {
					t.Errorf("leader did not panic")
				}
			case "cancel ignored by list":
				// Its own list's result, even though it came late.
				if lo.err != nil || lo.shared || len(lo.tools) != 1 || lo.tools[0] != `{"name":"late"}` {
					t.Errorf("leader = %+v, want its own late result", lo)
				}
			}
			if n := calls.Load(); n != 2 {
				t.Errorf("list called %d times, want 2", n)
			}
		})
	}
}

func TestSharedListingsWaiterCtx(t *testing.T) {
	s := NewSharedListings()
	waits := newWaitCounter(s)
	release := make(chan struct{})
	var calls atomic.Int32
	leaderStarted := make(chan struct{})
	list := func(ctx context.Context) ([]json.RawMessage, error) {
		if calls.Add(1) == 1 {
			close(leaderStarted)
		}
		<-release
		return raws(`{"name":"a"}`), nil
	}
	leaderOut := make(chan listOutcome, 1)
	go func() {
		tools, shared, err := s.List(context.Background(), "k", list)
		leaderOut <- listOutcome{0, rawStrings(tools), shared, err}
	}()
	<-leaderStarted
	otherOut := make(chan listOutcome, 1)
	go func() {
		tools, shared, err := s.List(context.Background(), "k", list)
		otherOut <- listOutcome{1, rawStrings(tools), shared, err}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	impatientOut := make(chan listOutcome, 1)
	go func() {
		tools, shared, err := s.List(ctx, "k", list)
		impatientOut <- listOutcome{2, rawStrings(tools), shared, err}
	}()
	wctx, wcancel := context.WithTimeout(context.Background(), safety)
	defer wcancel()
	if err := waits.until(wctx, 2); err != nil {
		t.Fatal(err)
	}
	cancel()
	// The impatient waiter returns while the listing is still held.
	if o := recv(t, impatientOut, "the cancelled waiter"); !errors.Is(o.err, context.Canceled) {
		t.Fatalf("cancelled waiter: %+v", o)
	}
	close(release)
	for _, ch := range []chan listOutcome{leaderOut, otherOut} {
		if o := recv(t, ch, "a caller"); o.err != nil || len(o.tools) != 1 {
			t.Errorf("caller %d: %+v", o.who, o)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("list called %d times, want 1", n)
	}
}

func TestSharedListingsNoReuseAfterCompletion(t *testing.T) {
	var s SharedListings // zero value
	n := 0
	list := func(context.Context) ([]json.RawMessage, error) {
		n++
		return raws(`{"n":` + string(rune('0'+n)) + `}`), nil
	}
	for i := 1; i <= 2; i++ {
		tools, shared, err := s.List(context.Background(), "k", list)
		if err != nil || shared || len(tools) != 1 || string(tools[0]) != `{"n":`+string(rune('0'+i))+`}` {
			t.Fatalf("List #%d = %s, %v, %v", i, rawStrings(tools), shared, err)
		}
	}
	if n != 2 {
		t.Errorf("list called %d times, want 2", n)
	}
	// A failed listing is not remembered either.
	if _, _, err := s.List(context.Background(), "k", func(context.Context) ([]json.RawMessage, error) {
		return nil, errors.New("x")
	}); err == nil {
		t.Fatal("error lost")
	}
	if _, _, err := s.List(context.Background(), "k", list); err != nil {
		t.Fatal(err)
	}
	// An already cancelled ctx does not list at all.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := s.List(ctx, "k", list); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if n != 3 {
		t.Errorf("list called %d times, want 3", n)
	}
}

func TestSharedListingsKeysAreSeparate(t *testing.T) {
	s := NewSharedListings()
	both := make(chan struct{})
	var started sync.WaitGroup
	started.Add(2)
	out := make(chan listOutcome, 2)
	for i, key := range []string{"a", "b"} {
		go func() {
			tools, shared, err := s.List(context.Background(), key, func(context.Context) ([]json.RawMessage, error) {
				started.Done()
				<-both // both listings are in flight at once
				return raws(`"` + key + `"`), nil
			})
			out <- listOutcome{i, rawStrings(tools), shared, err}
		}()
	}
	go func() { started.Wait(); close(both) }()
	for range 2 {
		o := recv(t, out, "a caller")
		if o.err != nil || o.shared || len(o.tools) != 1 || o.tools[0] != []string{`"a"`, `"b"`}[o.who] {
			t.Errorf("caller %d: %+v", o.who, o)
		}
	}
}

func TestSharedListingsInvalidate(t *testing.T) {
	s := NewSharedListings()
	waits := newWaitCounter(s)
	var calls atomic.Int32
	release := make(chan struct{})
	leaderStarted := make(chan struct{})
	leaderOut := make(chan listOutcome, 1)
	go func() {
		tools, shared, err := s.List(context.Background(), "k", func(context.Context) ([]json.RawMessage, error) {
			calls.Add(1)
			close(leaderStarted)
			<-release
			return raws(`"old"`), nil
		})
		leaderOut <- listOutcome{0, rawStrings(tools), shared, err}
	}()
	<-leaderStarted

	const waiters = 2
	out := make(chan listOutcome, waiters+1)
	relist := func(ctx context.Context) ([]json.RawMessage, error) {
		calls.Add(1)
		wctx, cancel := context.WithTimeout(ctx, safety)
		defer cancel()
		// Initial waits, then the other waiter and the late joiner wait on
		// the new listing.
		if err := waits.until(wctx, waiters+waiters); err != nil {
			return nil, err
		}
		return raws(`"new"`), nil
	}
	for i := range waiters {
		go func() {
			tools, shared, err := s.List(context.Background(), "k", relist)
			out <- listOutcome{i + 1, rawStrings(tools), shared, err}
		}()
	}
	wctx, cancel := context.WithTimeout(context.Background(), safety)
	defer cancel()
	if err := waits.until(wctx, waiters); err != nil {
		t.Fatal(err)
	}
	s.Invalidate("k")
	// A caller joining after the invalidation, while the old listing still
	// runs, must not get the old result either.
	go func() {
		tools, shared, err := s.List(context.Background(), "k", relist)
		out <- listOutcome{9, rawStrings(tools), shared, err}
	}()
	for range waiters + 1 {
		o := recv(t, out, "a waiter")
		if o.err != nil || len(o.tools) != 1 || o.tools[0] != `"new"` {
			t.Errorf("caller %d: %+v, want the new listing", o.who, o)
		}
	}
	close(release)
	if o := recv(t, leaderOut, "the old leader"); o.err != nil || o.tools[0] != `"old"` || o.shared {
		t.Errorf("old leader: %+v, want its own result", o)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("list called %d times, want 2", n)
	}
	s.Invalidate("nothing in flight") // no-op
}
