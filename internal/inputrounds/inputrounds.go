// Package inputrounds bounds the multi round-trip requests of MCP
// 2026-07-28 (a result that asks for input, answered and sent again) as
// go-sdk's client bounds them (mcp/mrtr.go): the one bound shared by the
// sidecar's connections (mcpclient) and the gateway's legacy clients.
package inputrounds

import (
	"context"
	"fmt"
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/internal/ctxsleep"
)

// Bounds of the rounds of one request: requests in all, and answers that
// ask for nothing (a server shedding load) in a row.
const (
	MaxRequests = 10
	MaxShedding = 3
)

// Pause is the pause before a request that asked for nothing is sent
// again, times the count of such answers in a row.
const Pause = 100 * time.Millisecond

// Bound counts the rounds of one request. The zero value is ready, with
// Pause as its pause.
type Bound struct {
	// Pause replaces the package's Pause (tests shorten it).
	Pause    time.Duration
	round    int
	shedding int
}

// Next is called with each input-required result of the request before it
// is answered, asked the number of input requests it carries. It returns
// an error naming the bound once the request has taken MaxRequests, or
// asked for nothing MaxShedding times in a row; when nothing was asked it
// first pauses, longer each time in a row, or until ctx ends.
func (b *Bound) Next(ctx context.Context, asked int) error {
	b.round++
	if b.round >= MaxRequests {
		return fmt.Errorf("still asked for input after %d requests", b.round)
	}
	if asked > 0 {
		b.shedding = 0
		return nil
	}
	b.shedding++
	if b.shedding >= MaxShedding {
		return fmt.Errorf("answered %d times in a row that it needs input without asking for any", b.shedding)
	}
	pause := b.Pause
	if pause <= 0 {
		pause = Pause
	}
	return ctxsleep.Sleep(ctx, time.Duration(b.shedding)*pause)
}
