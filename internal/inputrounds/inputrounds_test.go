package inputrounds

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestBound: a request may take MaxRequests rounds in all, and answers
// that ask for nothing MaxShedding times in a row; an answer that asks
// resets the count in a row.
func TestBound(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		asked   []int  // input requests of each result, in order
		failsAt int    // the call of Next that fails (1-based), 0: none
		errText string // its error
	}{
		{"asks every time", []int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, MaxRequests, "still asked for input after 10 requests"},
		{"asks nine times", []int{1, 2, 1, 1, 1, 1, 1, 1, 1}, 0, ""},
		{"nothing asked, ever", []int{0, 0, 0}, MaxShedding, "answered 3 times in a row that it needs input without asking for any"},
		{"nothing asked twice, then asks", []int{0, 0, 1, 0, 0, 1}, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := Bound{Pause: time.Nanosecond}
			for i, asked := range tt.asked {
				err := b.Next(ctx, asked)
				if i+1 == tt.failsAt {
					if err == nil || err.Error() != tt.errText {
						t.Fatalf("call %d: err = %v, want %q", i+1, err, tt.errText)
					}
					return
				}
				if err != nil {
					t.Fatalf("call %d: %v", i+1, err)
				}
			}
			if tt.failsAt != 0 {
				t.Fatalf("no call failed, want call %d to", tt.failsAt)
			}
		})
	}
}

// TestBoundPauseEndsWithContext: the pause after an answer that asked for
// nothing ends when the request's context does.
func TestBoundPauseEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	b := Bound{Pause: time.Hour}
	if err := b.Next(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}
