package launcherprobe

import (
	"context"
	"sync"
)

// ReasonProbing is the reason a Monitor gives while it probes a candidate
// whose identity changed since its last verdict.
const ReasonProbing = "the file changed since it was last probed; probing it again"

// A Monitor keeps the verdict on one candidate current for as long as it is
// advertised. Current re-reads the candidate's identity (a few stat calls,
// no process) every time the launcher is about to be used; when the
// identity differs from the one the last verdict is about, it starts one
// probe in the background and reports the launcher unavailable until that
// probe verifies the new file. A negative verdict is revisited the same
// way, so a launcher installed or fixed later becomes available.
//
// A Monitor owns its probes: Close cancels the one in flight (killing its
// process group) and waits for it. It is safe for concurrent use.
type Monitor struct {
	p         *Prober
	candidate string
	fixed     bool // the verdict never changes: there is nothing to watch
	onChange  func(Result)

	ctx     context.Context
	cancel  context.CancelFunc
	flights sync.WaitGroup

	// mu also serialises the identity checks, so that the reported
	// verdicts follow the order in which the file was seen.
	mu       sync.Mutex
	reported Result  // the verdict last returned
	seen     bool    // reported holds a verdict
	probed   *probed // the last probe whose file was unchanged after it ran
	flight   *flight // the probe in progress, or nil
	closed   bool
	changes  []Result

	// notifyMu orders onChange calls: changes queue under mu and are
	// delivered by whoever holds notifyMu.
	notifyMu sync.Mutex

	// afterProbe, when set (tests), runs when a background probe ended,
	// whether or not its verdict was kept.
	afterProbe func()
}

type probed struct {
	id     identity
	result Result
}

type flight struct {
	id   identity
	done chan struct{}
}

// Monitor returns a Monitor of candidate whose probes run with p's
// settings until ctx ends or Close is called. onChange, if not nil, is
// called with every verdict that differs from the one before (not with the
// first), in order, outside any lock of the Monitor.
func (p *Prober) Monitor(ctx context.Context, candidate string, onChange func(Result)) *Monitor {
	m := &Monitor{p: p, candidate: candidate, onChange: onChange}
	m.ctx, m.cancel = context.WithCancel(ctx)
	return m
}

// FixedVerdict returns a Monitor that always reports r: for a candidate
// that was refused before it could be looked at (none given, or a path
// that is not representable).
func FixedVerdict(r Result) *Monitor {
	m := &Monitor{fixed: true, reported: r, seen: true, candidate: r.Path}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	return m
}

// Verify returns a verdict on the candidate as it is now, waiting for a
// probe if one is needed. If ctx ends first it returns an unavailable
// result; the probe goes on and a later call sees its verdict.
func (m *Monitor) Verify(ctx context.Context) Result {
	for {
		r, wait := m.check()
		if wait == nil {
			return r
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return unavailable(m.candidate, "probe cancelled: "+context.Cause(ctx).Error())
		}
	}
}

// Current returns the verdict on the candidate as it is now, without
// waiting: a candidate whose file changed is unavailable (ReasonProbing)
// until the probe it starts has verified it.
func (m *Monitor) Current() Result {
	r, _ := m.check()
	return r
}

// check identifies the candidate and returns the verdict on it, or, when a
// probe is needed, starts it (unless it runs already) and returns the
// channel that closes when it ends along with an unavailable result.
func (m *Monitor) check() (Result, <-chan struct{}) {
	m.mu.Lock()
	if m.fixed {
		r := m.reported
		m.mu.Unlock()
		return r, nil
	}
	if m.probed != nil && m.probed.id.unchanged(m.candidate) {
		r := m.probed.result
		m.setLocked(r, true)
		m.mu.Unlock()
		m.deliver()
		return r, nil
	}
	var r Result
	var wait <-chan struct{}
	switch id, reason := identify(m.candidate); {
	case reason != "":
		r = unavailable(m.candidate, reason)
	case m.probed != nil && m.probed.id == id:
		r = m.probed.result
	case m.closed:
		r = unavailable(m.candidate, "no longer monitored")
	default:
		wait = m.startLocked(id)
		r = unavailable(m.candidate, ReasonProbing)
	}
	m.setLocked(r, wait == nil)
	m.mu.Unlock()
	m.deliver()
	return r, wait
}

// startLocked starts the probe of id unless one is running, and returns the
// channel that closes when the running probe ends. One probe runs at a
// time: if the file changed again meanwhile, the probe's verdict is
// dropped when it ends and the next check starts another.
func (m *Monitor) startLocked(id identity) <-chan struct{} {
	if m.flight != nil {
		return m.flight.done
	}
	f := &flight{id: id, done: make(chan struct{})}
	m.flight = f
	m.flights.Add(1)
	go func() {
		defer m.flights.Done()
		r := m.p.verdict(m.ctx, m.candidate, id)
		now, reason := identify(m.candidate)
		m.mu.Lock()
		m.flight = nil
		close(f.done)
		if m.ctx.Err() == nil && reason == "" && now == id {
			m.probed = &probed{id: id, result: r}
			m.setLocked(r, true)
		}
		m.mu.Unlock()
		m.deliver()
		if m.afterProbe != nil {
			m.afterProbe()
		}
	}()
	return f.done
}

// setLocked records r as the reported verdict and queues it for onChange
// if it differs from the one before. A probe in progress for the very
// first verdict is not reported as a change: it is the start, not news.
func (m *Monitor) setLocked(r Result, final bool) {
	if !m.seen {
		if final {
			m.reported, m.seen = r, true
		}
		return
	}
	old := m.reported
	m.reported = r
	if old.Status != r.Status || old.Reason != r.Reason || old.Target != r.Target {
		m.changes = append(m.changes, r)
	}
}

// deliver calls onChange with the queued changes, in order.
func (m *Monitor) deliver() {
	m.notifyMu.Lock()
	defer m.notifyMu.Unlock()
	for {
		m.mu.Lock()
		changes := m.changes
		m.changes = nil
		m.mu.Unlock()
		if len(changes) == 0 {
			return
		}
		for _, r := range changes {
			if m.onChange != nil {
				m.onChange(r)
			}
		}
	}
}

// Close cancels the probe in progress and waits for it to end.
func (m *Monitor) Close() {
	m.mu.Lock()
	m.closed = true // no probe starts after this
	m.mu.Unlock()
	m.cancel()
	m.flights.Wait()
}
