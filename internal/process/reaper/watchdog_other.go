//go:build !unix

package reaper

import "os/exec"

// On Windows each server runs in a job object that ends with the sidecar's
// last handle to it: no watchdog is needed.
const watchdogSupported = false

func setWatchdogAttrs(*exec.Cmd) {}
func killGroup(int)              {}
