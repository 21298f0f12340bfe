//go:build !unix && !windows

package mcpclient

import (
	"os/exec"
	"time"
)

// Without process groups or job objects only the direct child can be
// ended: os/exec kills it.
type tree struct{ cmd *exec.Cmd }

func newTree() *tree                { return &tree{} }
func (t *tree) prepare(c *exec.Cmd) { t.cmd = c }
func (t *tree) attach(int) error    { return nil }
func (t *tree) update()             {}
func (t *tree) release()            {}

type signal int

const (
	sigTerminate signal = iota
	sigKill
)

func (t *tree) signal(signal) {
	if t.cmd.Process != nil {
		t.cmd.Process.Kill()
	}
}

func (t *tree) wait(time.Duration, signal) bool { return true }
