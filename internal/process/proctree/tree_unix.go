//go:build unix

package proctree

import (
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Tree is everything one server started, on Unix: the process group it
// leads and, through the process table, the processes that left the group
// but descend from it (Set). Its methods are safe for concurrent use.
type Tree struct {
	mu   sync.Mutex // Set is not safe for concurrent use
	set  *Set
	live []Proc // as of the last update
}

func NewTree() *Tree { return &Tree{} }

// Prepare puts the child in a process group of its own, so that closing
// the connection can signal the server and everything it started (npx,
// sh -c, node workers) at once.
func (t *Tree) Prepare(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	setDeathSignal(cmd.SysProcAttr)
}

// Attach starts following the group the child leads (Setpgid with Pgid 0).
func (t *Tree) Attach(pid int) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.set = NewGroup(pid)
	return nil
}

// Update reads the process table and adds what the server started since.
func (t *Tree) Update() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.set == nil {
		return
	}
	if live, err := t.set.Update(); err == nil {
		t.live = live
	}
}

// Signal sends sig to the group and to every member that left it.
func (t *Tree) Signal(sig Signal) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.set == nil {
		return
	}
	live, err := t.set.Update()
	if err != nil {
		live = t.live
	}
	t.set.Signal(live, sig)
}

// Wait waits up to d until nothing of the tree runs; with a non-zero
// resend it sends that signal to members that are still there.
func (t *Tree) Wait(d time.Duration, resend Signal) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.set == nil {
		return true
	}
	return t.set.Wait(d, resend)
}

// Release lets go of what Attach holds; on Unix there is nothing.
func (t *Tree) Release() {}
