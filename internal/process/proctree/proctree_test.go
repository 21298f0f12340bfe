package proctree

import (
	"fmt"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The caller in the synthetic tables: pid 100, group 100, session 50.
var self = Proc{PID: 100, PPID: 50, PGID: 100, SID: 50, Start: 1}

func pids(ps []Proc) []int {
	var out []int
	for _, p := range ps {
		out = append(out, p.PID)
	}
	slices.Sort(out)
	return out
}

func TestSetFollowsTheServer(t *testing.T) {
	// The server leads group 200 in the caller's session.
	server := Proc{PID: 200, PPID: 100, PGID: 200, SID: 50, Start: 10}
	for _, tc := range []struct {
		name  string
		steps [][]Proc // successive tables
		want  []int    // live members after the last
	}{
		{"group and children", [][]Proc{{self, server,
			{PID: 201, PPID: 200, PGID: 200, SID: 50, Start: 11},
			{PID: 202, PPID: 201, PGID: 202, SID: 50, Start: 12}, // setpgid: out of the group, still a descendant
			{PID: 300, PPID: 1, PGID: 300, SID: 300, Start: 5},   // unrelated
		}}, []int{200, 201, 202}},
		{"setsid child and what it starts", [][]Proc{{self, server,
			{PID: 210, PPID: 200, PGID: 210, SID: 210, Start: 11},
			{PID: 211, PPID: 210, PGID: 210, SID: 210, Start: 12},
		}}, []int{200, 210, 211}},
		{"orphans of a known session leader", [][]Proc{
			{self, server, {PID: 210, PPID: 200, PGID: 210, SID: 210, Start: 11}},
			// 210 exited; its child was re-parented, but is in 210's session.
			{self, server, {PID: 212, PPID: 100, PGID: 212, SID: 210, Start: 13}},
		}, []int{200, 212}},
		{"orphans of a known group leader", [][]Proc{
			{self, server, {PID: 220, PPID: 200, PGID: 220, SID: 50, Start: 11}},
			{self, server, {PID: 221, PPID: 1, PGID: 220, SID: 50, Start: 12}},
		}, []int{200, 221}},
		{"a reused pid is not the member", [][]Proc{
			{self, server, {PID: 230, PPID: 200, PGID: 230, SID: 230, Start: 11}},
			// 230 ended; the pid now names an unrelated process, and
			// what runs in its session is not the server's.
			{self, server, {PID: 230, PPID: 1, PGID: 230, SID: 230, Start: 99}, {PID: 231, PPID: 230, PGID: 230, SID: 230, Start: 100}},
		}, []int{200}},
		{"zombies run nothing", [][]Proc{{self, server, {PID: 240, PPID: 200, PGID: 200, SID: 50, Start: 11, Zombie: true}}}, []int{200}},
		{"never the caller, its group or its session", [][]Proc{{self, server,
			{PID: 250, PPID: 200, PGID: 100, SID: 50, Start: 11}, // joined the caller's group, but descends from the server
			{PID: 251, PPID: 1, PGID: 100, SID: 50, Start: 12},   // in the caller's group, not a descendant
		}}, []int{200, 250}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewGroup(200)
			var live []Proc
			for _, table := range tc.steps {
				s.self = &Self{PID: self.PID, PGID: self.PGID, SID: self.SID}
				live = s.update(table)
			}
			if diff := cmp.Diff(tc.want, pids(live)); diff != "" {
				t.Errorf("live members (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGroupsToSignal(t *testing.T) {
	s := NewGroup(200)
	s.self = &Self{PID: self.PID, PGID: self.PGID, SID: self.SID}
	live := s.update([]Proc{self,
		{PID: 200, PPID: 100, PGID: 200, SID: 50, Start: 10},
		{PID: 210, PPID: 200, PGID: 210, SID: 210, Start: 11}, // leads its own group
		{PID: 211, PPID: 210, PGID: 210, SID: 210, Start: 12},
	})
	got := s.groupsOf(live)
	slices.Sort(got)
	if diff := cmp.Diff([]int{200, 210}, got); diff != "" {
		t.Errorf("groups (-want +got):\n%s", diff)
	}
}

// testWait is a safety net, never the thing under test.
const testWait = 10 * time.Second

func fmtFscan(r io.Reader, v ...any) (int, error) { return fmt.Fscan(r, v...) }

func pidsSorted(p ...int) []int {
	slices.Sort(p)
	return p
}

// BenchmarkSnapshot is the cost of one read of the process table, which a
// teardown does a few times (before closing stdin, then while it waits).
func BenchmarkSnapshot(b *testing.B) {
	n := 0
	for b.Loop() {
		table, err := Snapshot()
		if err != nil {
			b.Skip(err)
		}
		n = len(table)
	}
	b.ReportMetric(float64(n), "procs")
}
