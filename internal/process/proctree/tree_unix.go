//go:build unix

package mcpclient

import (
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/internal/process/proctree"
)

// tree is everything one server started, on Unix: the process group it
// leads and, through the process table, the processes that left the group
// but descend from it (proctree).
type tree struct {
	mu   sync.Mutex // proctree.Set is not safe for concurrent use
	set  *proctree.Set
	live []proctree.Proc // as of the last update
}

func newTree() *tree { return &tree{} }

// prepare puts the child in a process group of its own, so that closing
// the connection can signal the server and everything it started (npx,
// sh -c, node workers) at once.
func (t *tree) prepare(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	setDeathSignal(cmd.SysProcAttr)
}

// attach starts following the group the child leads (Setpgid with Pgid 0).
func (t *tree) attach(pid int) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.set = proctree.NewGroup(pid)
	return nil
}

// update reads the process table and adds what the server started since.
func (t *tree) update() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.set == nil {
		return
	}
	if live, err := t.set.Update(); err == nil {
		t.live = live
	}
}

const (
	sigTerminate = proctree.Terminate
	sigKill      = proctree.Kill
)

// signal sends sig to the group and to every member that left it.
func (t *tree) signal(sig proctree.Signal) {
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

// wait waits up to d until nothing of the tree runs.
func (t *tree) wait(d time.Duration, resend proctree.Signal) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.set == nil {
		return true
	}
	return t.set.Wait(d, resend)
}

func (t *tree) release() {}
