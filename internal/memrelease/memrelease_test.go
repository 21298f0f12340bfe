package memrelease

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fake is a clock whose timers run only when the test says.
type fake struct {
	now    time.Time
	timers []timer // scheduled and not yet run or stopped
	events []string
}

type timer struct {
	at      time.Time
	f       func()
	stopped bool
}

func (c *fake) after(d time.Duration, f func()) func() bool {
	c.events = append(c.events, "scheduled in "+d.String())
	c.timers = append(c.timers, timer{at: c.now.Add(d), f: f})
	i := len(c.timers) - 1
	return func() bool {
		c.events = append(c.events, "stopped")
		c.timers[i].stopped = true
		return true
	}
}

// advance moves the clock by d, running the timers that are due.
func (c *fake) advance(d time.Duration) {
	c.now = c.now.Add(d)
	for i := 0; i < len(c.timers); i++ {
		t := &c.timers[i]
		if t.f != nil && !t.stopped && !t.at.After(c.now) {
			f := t.f
			t.f = nil
			f()
		}
	}
}

// TestReleaser: a release follows the last large payload by Delay at
// least, and the one before it by Every at least; small payloads cost
// nothing, and nothing runs once closed.
func TestReleaser(t *testing.T) {
	const above = 1 << 20
	type step struct {
		wait time.Duration // the clock moves first
		note int           // then a payload of this size is noted (0: none)
	}
	tests := []struct {
		name  string
		steps []step
		close bool
		want  []string
	}{
		{
			name:  "small payloads",
			steps: []step{{0, above - 1}, {time.Second, 100}, {time.Minute, 0}},
		},
		{
			name:  "one large payload",
			steps: []step{{0, above}, {Delay, 0}},
			want:  []string{"scheduled in 1s", "released"},
		},
		{
			name: "payloads while a release waits that it comes late enough for",
			// A payload read and then written at once: one release.
			steps: []step{{0, above}, {0, 10 * above}, {Delay, 0}, {time.Minute, 0}},
			want:  []string{"scheduled in 1s", "released"},
		},
		{
			name: "a payload too late for the release scheduled",
			// Read, then written half a second later (its end): the
			// release it was read with comes while it is still held, and
			// one more follows, within the rate limit.
			steps: []step{{0, above}, {Delay / 2, above}, {Delay / 2, 0}, {Every, 0}, {time.Minute, 0}},
			want:  []string{"scheduled in 1s", "scheduled in 10s", "released", "released"},
		},
		{
			name:  "the next large payload soon after a release",
			steps: []step{{0, above}, {Delay, 0}, {time.Second, above}, {Every, 0}},
			want:  []string{"scheduled in 1s", "released", "scheduled in 9s", "released"},
		},
		{
			name:  "the next large payload long after a release",
			steps: []step{{0, above}, {Delay, 0}, {time.Minute, above}, {Delay, 0}},
			want:  []string{"scheduled in 1s", "released", "scheduled in 1s", "released"},
		},
		{
			name:  "closed with a release waiting",
			steps: []step{{0, above}},
			close: true,
			want:  []string{"scheduled in 1s", "stopped"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &fake{now: time.Unix(1000, 0)}
			r := New(Options{
				Above: above,
				Free:  func() { c.events = append(c.events, "released") },
				Now:   func() time.Time { return c.now },
				After: c.after,
			})
			for _, s := range tt.steps {
				c.advance(s.wait)
				r.Note(s.note)
			}
			if tt.close {
				r.Close()
				r.Note(above)
				c.advance(time.Minute)
			}
			if diff := cmp.Diff(tt.want, c.events); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReleaserOff: a Releaser without a size does nothing, nil included.
func TestReleaserOff(t *testing.T) {
	if r := New(Options{}); r != nil {
		t.Fatalf("New without Above = %v, want nil", r)
	}
	var r *Releaser
	r.Note(1 << 30)
	r.Close()
}
