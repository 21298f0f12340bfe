//go:build !unix

package mcpclient

import (
	"os"
	"os/exec"
)

// Without process groups only the direct child can be signalled.

func setProcessGroup(*exec.Cmd) {}

func groupAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	_ = p.Release()
	return false
}

func terminateGroup(pid int) error { return killGroup(pid) }

func killGroup(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return nil
	}
	return p.Kill()
}
