package sidecar_test

import (
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/testclock"
)

// newFakeClock is a clock tests move by hand (sidecar.Hooks.Now).
func newFakeClock() *testclock.Clock { return testclock.New(time.Unix(1_700_000_000, 0)) }
