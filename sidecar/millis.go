package sidecar

import (
	"math"
	"time"
)

// millis is n milliseconds as a Duration, saturating at the longest one:
// a host may write any integer (JavaScript's Number.MAX_SAFE_INTEGER for
// "no limit of mine"), and n*time.Millisecond overflows past 292 years
// into a negative, already expired, duration.
func millis(n int64) time.Duration {
	if n > math.MaxInt64/int64(time.Millisecond) {
		return math.MaxInt64
	}
	return time.Duration(n) * time.Millisecond
}
