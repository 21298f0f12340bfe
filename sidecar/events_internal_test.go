package sidecar

import (
	"testing"
	"time"
)

// TestLogLimiter: a server flooding logs gets its burst, then its rate;
// what was dropped is counted and reported before the next line that goes
// out; a closed session's buckets are forgotten.
func TestLogLimiter(t *testing.T) {
	l := newLogLimiter(10, 5)
	now := time.Unix(1000, 0)
	key := "s1\x00srv"
	for i := 0; i < 5; i++ {
		if _, send := l.admit(key, now); !send {
			t.Fatalf("line %d of the burst refused", i)
		}
	}
	for i := 0; i < 7; i++ {
		if dropped, send := l.admit(key, now); send || dropped != 0 {
			t.Fatalf("line %d past the burst: send %v, notice of %d", i, send, dropped)
		}
	}
	// Another server has its own bucket.
	if _, send := l.admit("s1\x00other", now); !send {
		t.Error("a quiet server was limited by a noisy one")
	}
	// 200 ms later two tokens (10/s) are back: one for the notice of the
	// seven drops, one for the line.
	dropped, send := l.admit(key, now.Add(200*time.Millisecond))
	if !send || dropped != 7 {
		t.Errorf("after 200 ms: send %v, dropped %d; want true, 7", send, dropped)
	}
	l.forgetSession("s1")
	if len(l.buckets) != 0 {
		t.Errorf("%d buckets left after the session closed", len(l.buckets))
	}
}

// TestLogLimiterBoundIncludesNotices: under a flood, the messages that go
// out (lines and notices of dropped lines) stay within burst + rate × time,
// and every line is either sent or counted in a notice.
func TestLogLimiterBoundIncludesNotices(t *testing.T) {
	const (
		perSecond = 50
		burst     = 200
		seconds   = 10
	)
	for _, floodPerSecond := range []int{60, 100, 1000, 10000} {
		l := newLogLimiter(perSecond, burst)
		start := time.Unix(1000, 0)
		step := time.Second / time.Duration(floodPerSecond)
		var messages, lines, reported int
		offered := floodPerSecond * seconds
		for i := range offered {
			dropped, send := l.admit("s\x00flood", start.Add(time.Duration(i)*step))
			if dropped > 0 {
				messages++
				reported += dropped
			}
			if send {
				messages++
				lines++
			}
		}
		if max := burst + perSecond*seconds; messages > max {
			t.Errorf("flood of %d/s: %d mcp/log messages in %d s, want at most %d (burst %d + %d/s)", floodPerSecond, messages, seconds, max, burst, perSecond)
		}
		pending := l.buckets["s\x00flood"].dropped
		if lines+reported+pending != offered {
			t.Errorf("flood of %d/s: %d sent + %d reported dropped + %d pending != %d offered", floodPerSecond, lines, reported, pending, offered)
		}
	}
}
