// Package ctxsleep is a pause that ends early with its context: the
// retry, backoff and pacing loops of mcpclient, sidecar and the fixtures
// wait with it.
package ctxsleep

import (
	"context"
	"time"
)

// Sleep waits for d, or until ctx ends: then it returns ctx's error.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
