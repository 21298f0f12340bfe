// Package reaper is the serving sidecar's owner of process cleanup beyond
// single connections. On Linux it makes the sidecar a child subreaper, so
// that what a server orphans is re-parented to the sidecar rather than to
// init; it reaps those orphans without touching the children os/exec waits
// for, ends a connection's orphans when the connection asks (they carry
// its marker, MarkerVar, in their environment), and ends the rest when the
// sidecar stops. On Unix it keeps a watchdog process that ends every
// server's process group if the sidecar is killed (SIGKILL) and cannot do
// it itself.
//
// A process has one Reaper, created by the command that serves the host
// protocol: being a subreaper is a property of the whole process, and the
// sweep at Close takes every orphan the process adopted.
package reaper

import (
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/internal/process/proctree"
)

// Options configure New.
type Options struct {
	// Watchdog is the command line of the watchdog process: the sidecar's
	// own binary, re-executed so that it runs Watchdog on its stdin. Empty:
	// no watchdog.
	Watchdog []string
	// WatchdogEnv is the watchdog's whole environment.
	WatchdogEnv []string
	Logger      *slog.Logger // nil: discard
	// Grace is how long Close waits after SIGTERM before it sends SIGKILL
	// to orphans (default 2 s).
	Grace time.Duration

	// reaped is told of each orphan reaped (tests).
	reaped func(pid int)
}

// Reaper registers the server processes the sidecar starts and ends what
// they leave behind. The zero *Reaper (nil) is valid: Start just starts.
type Reaper struct {
	opts   Options
	logger *slog.Logger

	// mu is held across Start, so that a child is registered before a
	// reaping pass can see it, and across each reaping pass.
	mu     sync.Mutex
	execs  map[int]bool // children os/exec waits for
	closed bool

	subreaper bool
	self      proctree.Self

	watchdog     *exec.Cmd
	watchdogIn   *os.File
	watchdogDone chan struct{}

	stopLoop chan struct{}
	loopDone chan struct{}
}

// New makes the calling process the reaper of its servers' orphans (on
// Linux) and starts the watchdog. Failures are logged, not fatal: without
// them the sidecar still ends its servers' process groups itself.
func New(opts Options) *Reaper {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Grace <= 0 {
		opts.Grace = 2 * time.Second
	}
	r := &Reaper{opts: opts, logger: opts.Logger, execs: map[int]bool{}}
	if err := becomeSubreaper(); err != nil {
		r.logger.Warn("not a child subreaper: descendants that leave their server's process group are re-parented to init", "err", err)
	} else if subreaperSupported {
		r.subreaper = true
		if table, err := proctree.Snapshot(); err == nil {
			r.self = proctree.SelfOf(table)
		} else {
			r.subreaper = false
			r.logger.Warn("cannot read the process table: orphans are not reaped", "err", err)
		}
	}
	if r.subreaper {
		r.stopLoop, r.loopDone = make(chan struct{}), make(chan struct{})
		go r.reapLoop()
	}
	if len(opts.Watchdog) > 0 && watchdogSupported {
		if err := r.startWatchdog(); err != nil {
			r.logger.Warn("no watchdog: if the sidecar is killed, its servers' process groups are not ended", "err", err)
		}
	}
	return r
}

// MarkerVar is the environment variable Start gives a server where orphans
// are adopted (Linux): a random id of that one server process, which its
// descendants inherit. A process the server detached (a double fork)
// leaves no parent chain to it, and may not be told apart from another
// server's otherwise. The id is no secret: a process that copies another
// server's marker only has itself ended with that server.
const MarkerVar = "MCP_SIDECAR_SERVER"

// Child is a started server process.
type Child struct {
	r      *Reaper
	pid    int
	marker string // MarkerVar=id, as in the server's environment; "" if none
}

// Start starts cmd (a server that leads a process group of its own) and
// registers it: the reaper never reaps it (os/exec does), and the watchdog
// ends its group if the sidecar is killed. Where orphans are adopted, the
// server's environment (cmd.Env, or the sidecar's if nil) gets MarkerVar,
// replacing any value it had.
func (r *Reaper) Start(cmd *exec.Cmd) (*Child, error) {
	if r == nil {
		return nil, cmd.Start()
	}
	var marker string
	if r.subreaper {
		marker = MarkerVar + "=" + rand.Text()
		env := cmd.Env
		if env == nil {
			env = os.Environ()
		}
		// os/exec keeps the last of duplicate variables.
		cmd.Env = append(env[:len(env):len(env)], marker)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	pid := cmd.Process.Pid
	r.execs[pid] = true
	r.tellWatchdog('+', pid)
	return &Child{r: r, pid: pid, marker: marker}, nil
}

// EndOrphans ends the orphans the child's processes left to the reaper:
// adopted processes whose environment carries the child's marker, and what
// they lead to (SIGTERM, then SIGKILL after grace). It returns once none of
// them runs (or, for one that does not die of SIGKILL, after a bound), at
// once if there are none. Call it when the child's connection is torn
// down, after its process group: what the group's processes detached while
// they were being ended is among the orphans then. Where orphans are not
// adopted (not Linux) it does nothing; a process that cleared its
// environment, or whose environment cannot be read (another user's), is
// left to Close.
func (c *Child) EndOrphans(grace time.Duration) {
	if c == nil || c.marker == "" {
		return
	}
	c.r.endAdopted("ending orphans of a server", grace, func(p proctree.Proc) bool {
		return proctree.HasEnv(p.PID, c.marker)
	})
}

// Waited says that os/exec reaped the child (its Wait returned).
func (c *Child) Waited() {
	if c == nil {
		return
	}
	c.r.mu.Lock()
	delete(c.r.execs, c.pid)
	c.r.mu.Unlock()
}

// Ended says that the child's process group is gone: the watchdog forgets
// it (its id may be reused).
func (c *Child) Ended() {
	if c == nil {
		return
	}
	c.r.mu.Lock()
	c.r.tellWatchdog('-', c.pid)
	c.r.mu.Unlock()
}

// Close ends the orphans the process adopted and no connection claimed
// (SIGTERM, then SIGKILL after Grace), reaps them, and stops the watchdog,
// which ends the process groups of children not Ended yet. Call it after
// every connection is closed.
func (r *Reaper) Close() {
	if r == nil {
		return
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	r.mu.Unlock()
	if r.subreaper {
		close(r.stopLoop)
		<-r.loopDone
		r.sweep()
	}
	r.stopWatchdog()
}

// sweep ends every adopted orphan and what it leads to.
func (r *Reaper) sweep() {
	r.endAdopted("ending orphans of servers", r.opts.Grace, func(proctree.Proc) bool { return true })
}

// endAdopted ends the adopted orphans that match, and what they lead to:
// SIGTERM, then SIGKILL after grace; then it reaps what ended. match is
// called without mu held (it may read files).
func (r *Reaper) endAdopted(what string, grace time.Duration, match func(proctree.Proc) bool) {
	table, err := proctree.Snapshot()
	if err != nil {
		return
	}
	r.mu.Lock()
	var adopted []proctree.Proc
	for _, p := range table {
		if r.adopted(p) {
			adopted = append(adopted, p)
		}
	}
	r.mu.Unlock()
	var roots []proctree.Proc
	for _, p := range adopted {
		if match(p) {
			roots = append(roots, p)
		}
	}
	if len(roots) > 0 {
		// A pid reused since the snapshot is not its root: the set knows
		// each by its start time.
		set := proctree.NewRoots(roots)
		if live, err := set.Update(); err == nil && len(live) > 0 {
			r.logger.Info(what, "count", len(live))
			set.Signal(live, proctree.Terminate)
			if !set.Wait(grace, 0) {
				live, _ := set.Update()
				set.Signal(live, proctree.Kill)
				set.Wait(2*time.Second, proctree.Kill)
			}
		}
	}
	r.reapAdopted()
}

// adopted reports whether p is an orphan re-parented to this process, as
// opposed to a child os/exec waits for: a registered server, a child that
// is still in this process's group (another package's child between its
// fork and its setpgid), or a child leading a group of its own in this
// session (the launcher probe). An orphan that led its own group in this
// session (setpgid without setsid) looks like the last and is left alone.
// Called with mu held.
func (r *Reaper) adopted(p proctree.Proc) bool {
	return p.PPID == r.self.PID && !r.execs[p.PID] && p.PGID != r.self.PGID &&
		(p.SID != r.self.SID || p.PGID != p.PID)
}

// reapAdopted reaps the zombies among adopted orphans, each by its pid.
func (r *Reaper) reapAdopted() {
	table, err := proctree.Snapshot()
	if err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range table {
		if p.Zombie && r.adopted(p) {
			reap(p.PID)
			if r.opts.reaped != nil {
				r.opts.reaped(p.PID)
			}
		}
	}
}

func (r *Reaper) startWatchdog() error {
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd := exec.Command(r.opts.Watchdog[0], r.opts.Watchdog[1:]...)
	cmd.Env = append([]string{}, r.opts.WatchdogEnv...)
	cmd.Stdin = pr // stdout and stderr: /dev/null, so the host never waits on them
	setWatchdogAttrs(cmd)
	r.mu.Lock()
	err = cmd.Start()
	if err == nil {
		r.execs[cmd.Process.Pid] = true
	}
	r.mu.Unlock()
	pr.Close()
	if err != nil {
		pw.Close()
		return err
	}
	r.watchdog, r.watchdogIn, r.watchdogDone = cmd, pw, make(chan struct{})
	go func() {
		cmd.Wait()
		r.mu.Lock()
		delete(r.execs, cmd.Process.Pid)
		r.mu.Unlock()
		close(r.watchdogDone)
	}()
	return nil
}

// tellWatchdog sends "+PGID" or "-PGID". Called with mu held, so lines
// never interleave. A dead watchdog is not fatal.
func (r *Reaper) tellWatchdog(op byte, pgid int) {
	if r.watchdogIn == nil {
		return
	}
	if _, err := r.watchdogIn.Write([]byte(string(op) + strconv.Itoa(pgid) + "\n")); err != nil {
		r.logger.Warn("watchdog gone", "err", err)
		r.watchdogIn.Close()
		r.watchdogIn = nil
	}
}

func (r *Reaper) stopWatchdog() {
	r.mu.Lock()
	in := r.watchdogIn
	r.watchdogIn = nil
	r.mu.Unlock()
	if r.watchdog == nil {
		return
	}
	if in != nil {
		in.Close()
	}
	t := time.NewTimer(5 * time.Second)
	defer t.Stop()
	select {
	case <-r.watchdogDone:
	case <-t.C:
		r.watchdog.Process.Kill()
		<-r.watchdogDone
	}
}

// Watchdog is the watchdog process's work: it reads "+PGID" and "-PGID"
// lines from in, and when in ends (the sidecar closed it, or died) it sends
// SIGKILL to every group still recorded. It returns the process's exit
// code.
func Watchdog(in io.Reader) int {
	groups := map[int]bool{}
	buf := make([]byte, 0, 64)
	chunk := make([]byte, 4096)
	for {
		n, err := in.Read(chunk)
		for _, b := range chunk[:n] {
			if b != '\n' {
				if len(buf) < 32 {
					buf = append(buf, b)
				}
				continue
			}
			if len(buf) > 1 {
				if id, perr := strconv.Atoi(string(buf[1:])); perr == nil && id > 1 {
					switch buf[0] {
					case '+':
						groups[id] = true
					case '-':
						delete(groups, id)
					}
				}
			}
			buf = buf[:0]
		}
		if err != nil {
			break
		}
	}
	for g := range groups {
		killGroup(g)
	}
	if len(groups) > 0 {
		fmt.Fprintf(os.Stderr, "mcp-sidecar watchdog: the sidecar ended with %d server process groups left; killed them\n", len(groups))
	}
	return 0
}
