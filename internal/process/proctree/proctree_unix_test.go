//go:build unix

package proctree

import (
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSnapshotSeesRealProcesses reads the real table: a sh that moved a
// child into a session of its own (setsid) is followed to it.
func TestSnapshotSeesRealProcesses(t *testing.T) {
	if _, err := Snapshot(); err != nil {
		t.Skipf("no process table here: %v", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// sh prints the setsid'd sleep's pid, then waits.
	cmd := exec.Command("sh", "-c", `setsid sleep 1000 </dev/null >/dev/null 2>&1 & echo $!; exec sleep 1000`)
	cmd.Stdout = w
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	var child int
	if _, err := fmtFscan(r, &child); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(child, syscall.SIGKILL)
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	s := NewGroup(cmd.Process.Pid)
	live, err := s.Update()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(pidsSorted(cmd.Process.Pid, child), pids(live)); diff != "" {
		t.Fatalf("live members (-want +got):\n%s", diff)
	}
	s.Signal(live, Kill)
	if !s.Wait(testWait, 0) {
		t.Errorf("members still live after SIGKILL")
	}
}
