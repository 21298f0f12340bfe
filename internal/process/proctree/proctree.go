// Package proctree follows the processes one server started, as far as the
// operating system lets them be told apart: its process group, the
// descendants of its members, and the groups and sessions they lead. A
// server that hid a child from its group (setsid, a detached node child)
// cannot leave that child running as long as its parent chain was intact
// when the set was last updated.
//
// Tree is what one stdio connection holds: it puts the server in a group
// of its own when it starts (on Windows, a job object), and signals and
// waits for everything the server started when the connection ends.
package proctree

import (
	"errors"
	"os"
	"time"
)

// Proc is one process of the table.
type Proc struct {
	PID, PPID, PGID int
	// SID is the session id; 0 where the platform does not say (macOS).
	SID int
	// Start is the start time in the platform's units: a pid and its
	// start time name one process, even when the pid is reused.
	Start  uint64
	Zombie bool
}

// ErrUnsupported is returned by Snapshot where the process table cannot be
// read (Windows, where job objects do this job).
var ErrUnsupported = errors.New("proctree: reading the process table is not supported on this platform")

// Snapshot reads every process of the machine.
func Snapshot() ([]Proc, error) { return snapshot() }

// Self is the calling process as the table sees it (group and session).
type Self struct {
	PID, PGID, SID int
}

// SelfOf finds the calling process in table.
func SelfOf(table []Proc) Self {
	pid := os.Getpid()
	for _, p := range table {
		if p.PID == pid {
			return Self{PID: pid, PGID: p.PGID, SID: p.SID}
		}
	}
	return Self{PID: pid}
}

// Set is the processes of one server. It is not safe for concurrent use.
type Set struct {
	self    *Self
	groups  map[int]bool   // process groups whose members belong
	members map[int]uint64 // pid -> start time of every process seen in the set
	// leads are the pids of members ever seen: a group or session such a
	// pid leads belongs to the set, also after its leader is gone.
	leads map[int]uint64
	// snapshot reads the table (Snapshot; tests replace it).
	snapshot func() ([]Proc, error)
}

// NewGroup is the set of process group pgid (a server started as the
// leader of a group of its own) and everything it leads to.
func NewGroup(pgid int) *Set {
	s := newSet()
	s.groups[pgid] = true
	return s
}

// NewRoots is the set of the given processes and everything they lead to.
func NewRoots(roots []Proc) *Set {
	s := newSet()
	for _, p := range roots {
		s.members[p.PID] = p.Start
		s.leads[p.PID] = p.Start
	}
	return s
}

func newSet() *Set {
	return &Set{groups: map[int]bool{}, members: map[int]uint64{}, leads: map[int]uint64{}, snapshot: Snapshot}
}

// Update reads the process table and returns the live members of the set
// (zombies run nothing and are left out), adding what belongs to it now.
func (s *Set) Update() ([]Proc, error) {
	table, err := s.snapshot()
	if err != nil {
		return nil, err
	}
	return s.update(table), nil
}

// update adds to the set what belongs to it in table: processes of its
// groups, of groups and sessions its members lead, and children of its
// members, to a fixed point. The calling process, its group and its
// session never belong.
func (s *Set) update(table []Proc) []Proc {
	if s.self == nil {
		self := SelfOf(table)
		s.self = &self
	}
	self := *s.self
	byPID := make(map[int]Proc, len(table))
	for _, p := range table {
		byPID[p.PID] = p
	}
	// A member that is gone is forgotten; a pid now used by a process
	// started later is not the member, and groups or sessions it leads are
	// not the set's.
	for pid, start := range s.members {
		if p, ok := byPID[pid]; !ok || p.Start != start {
			delete(s.members, pid)
		}
	}
	for pid, start := range s.leads {
		if p, ok := byPID[pid]; ok && p.Start != start {
			delete(s.leads, pid)
		}
	}
	belongs := func(p Proc) bool {
		if p.PID == self.PID || p.PID <= 1 {
			return false
		}
		if _, ok := s.members[p.PID]; ok {
			return false // already in
		}
		if _, ok := s.members[p.PPID]; ok {
			return true
		}
		if p.PGID != self.PGID && (s.groups[p.PGID] || s.hasLead(p.PGID)) {
			return true
		}
		return p.SID != 0 && p.SID != self.SID && s.hasLead(p.SID)
	}
	for changed := true; changed; {
		changed = false
		for _, p := range table {
			if belongs(p) {
				s.members[p.PID] = p.Start
				s.leads[p.PID] = p.Start
				changed = true
			}
		}
	}
	var live []Proc
	for pid := range s.members {
		if p := byPID[pid]; !p.Zombie {
			live = append(live, p)
		}
	}
	return live
}

func (s *Set) hasLead(id int) bool {
	_, ok := s.leads[id]
	return ok
}

// groupsOf returns the process groups to signal as a whole: the set's own
// and those its live members lead (never the caller's).
func (s *Set) groupsOf(live []Proc) []int {
	var out []int
	for g := range s.groups {
		out = append(out, g)
	}
	for _, p := range live {
		if p.PGID == p.PID && (s.self == nil || p.PGID != s.self.PGID) && !s.groups[p.PGID] {
			out = append(out, p.PGID)
		}
	}
	return out
}

// Signal sends sig to the set's groups and to each of live (what Update
// returned) by its pid: a member may leave its group (setsid) between the
// reading of the table and the group's signal, and a signal to its pid
// still reaches it. A member inside a group gets sig twice, which a
// teardown can afford: a server that takes a second SIGTERM as "quit now"
// is being stopped anyway.
func (s *Set) Signal(live []Proc, sig Signal) {
	for _, g := range s.groupsOf(live) {
		signalGroup(g, sig)
	}
	for _, p := range live {
		signalProcess(p.PID, sig)
	}
}

// Wait polls until no member of the set is live, for at most d, and
// reports whether none is. Between full reads of the table it looks only
// at the members it knows; a full read confirms before it reports them
// gone. With a non-zero resend it sends that signal to members that
// appear meanwhile (a child forked while its parent was being killed). A
// set whose table cannot be read waits on its groups.
func (s *Set) Wait(d time.Duration, resend Signal) bool {
	deadline := time.Now().Add(d)
	pause := 2 * time.Millisecond
	for {
		if !s.knownLive() {
			live, err := s.Update()
			switch {
			case err != nil && !s.groupsAlive():
				return true
			case err != nil && resend != 0:
				s.Signal(nil, resend)
			case err == nil && len(live) == 0:
				return true
			case err == nil && resend != 0:
				s.Signal(live, resend)
			}
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		// No event says that a process which is not our child ended.
		time.Sleep(min(pause, left))
		pause = min(2*pause, 50*time.Millisecond)
	}
}

// knownLive reports whether a member the set knows still runs, looking at
// those members only.
func (s *Set) knownLive() bool {
	for pid, start := range s.members {
		if p, ok := lookup(pid); ok && p.Start == start && !p.Zombie {
			return true
		}
	}
	return false
}

func (s *Set) groupsAlive() bool {
	for g := range s.groups {
		if groupAlive(g) {
			return true
		}
	}
	return false
}
