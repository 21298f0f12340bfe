package sidecar

import (
	"testing"
	"time"
)

// TestLogLimiter: a server flooding logs gets its burst, then its rate;
// what was dropped is counted and reported with the next line that goes
// out; a closed session's buckets are forgotten.
func TestLogLimiter(t *testing.T) {
	l := newLogLimiter(10, 5)
	now := time.Unix(1000, 0)
	key := "s1\x00srv"
	for i := 0; i < 5; i++ {
		if ok, _ := l.allow(key, now); !ok {
			t.Fatalf("line %d of the burst refused", i)
		}
	}
	for i := 0; i < 7; i++ {
		if ok, _ := l.allow(key, now); ok {
			t.Fatalf("line %d past the burst allowed", i)
		}
	}
	// Another server has its own bucket.
	if ok, _ := l.allow("s1\x00other", now); !ok {
		t.Error("a quiet server was limited by a noisy one")
	}
	// 100 ms later one token (10/s) is back, and the drops are reported.
	ok, dropped := l.allow(key, now.Add(100*time.Millisecond))
	if !ok || dropped != 7 {
		t.Errorf("after 100 ms: allowed %v, dropped %d; want true, 7", ok, dropped)
	}
	l.forgetSession("s1")
	if len(l.buckets) != 0 {
		t.Errorf("%d buckets left after the session closed", len(l.buckets))
	}
}
