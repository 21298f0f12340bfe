package proctree

import "syscall"

// setDeathSignal makes the kernel kill the server if the sidecar dies
// without closing it. Pdeathsig fires when the thread that forked exits;
// the Go runtime keeps its threads, so in practice it is the process.
func setDeathSignal(attr *syscall.SysProcAttr) {
	attr.Pdeathsig = syscall.SIGKILL
}
