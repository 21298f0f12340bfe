//go:build unix && !linux

package proctree

import "syscall"

// setDeathSignal: there is no parent-death signal outside Linux; Close (and
// the host's EOF handling) must end the group.
func setDeathSignal(*syscall.SysProcAttr) {}
