//go:build !unix && !windows

package proctree

import (
	"os/exec"
	"time"
)

// Tree is the server alone: without process groups or job objects only
// the direct child can be ended, and os/exec kills it.
type Tree struct{ cmd *exec.Cmd }

func NewTree() *Tree                { return &Tree{} }
func (t *Tree) Prepare(c *exec.Cmd) { t.cmd = c }
func (t *Tree) Attach(int) error    { return nil }
func (t *Tree) Update()             {}
func (t *Tree) Release()            {}

func (t *Tree) Signal(Signal) {
	if t.cmd.Process != nil {
		t.cmd.Process.Kill()
	}
}

func (t *Tree) Wait(time.Duration, Signal) bool { return true }
