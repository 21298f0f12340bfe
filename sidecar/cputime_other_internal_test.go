//go:build !unix

package sidecar

import "time"

// processCPU is not read on this system: benchmarks report no CPU time.
func processCPU() time.Duration { return 0 }
