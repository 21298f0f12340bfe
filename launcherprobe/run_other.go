//go:build !unix

package launcherprobe

import (
	"os/exec"
	"runtime"
)

// unsupportedReason is why no launcher is ever verified here. The checks
// that make a launcher safe to advertise (no one but its owner can rewrite
// the file or its directory; a change of the file is noticed through its
// device, inode and ctime) have no equivalent in Windows' permission model
// that this package could verify, so the launcher fails closed.
const unsupportedReason = "not supported on " + runtime.GOOS + ": the sidecar cannot verify that only the owner can change the launcher and its directory"

func ownProcessGroup(*exec.Cmd) {}

func signalled(*exec.ExitError) (string, bool) { return "", false }
