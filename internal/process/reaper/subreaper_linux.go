package reaper

import (
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

const subreaperSupported = true

// becomeSubreaper makes orphaned descendants of this process re-parented
// to it instead of to init (PR_SET_CHILD_SUBREAPER, Linux 3.4).
func becomeSubreaper() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// reapLoop reaps adopted orphans as they end: each SIGCHLD (which also
// comes for children os/exec waits for; those are left to it) starts a
// pass.
func (r *Reaper) reapLoop() {
	defer close(r.loopDone)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGCHLD)
	defer signal.Stop(ch)
	for {
		select {
		case <-ch:
			r.reapAdopted()
		case <-r.stopLoop:
			return
		}
	}
}

// reap collects the exit status of the orphan pid, and only of it.
func reap(pid int) {
	var ws unix.WaitStatus
	unix.Wait4(pid, &ws, unix.WNOHANG, nil)
}
