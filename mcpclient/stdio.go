package mcpclient

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/peerlog"
	"github.com/mcp-sidecar/mcp-sidecar/internal/pipeio"
	"github.com/mcp-sidecar/mcp-sidecar/internal/process/proctree"
	"github.com/mcp-sidecar/mcp-sidecar/internal/process/reaper"
	"github.com/mcp-sidecar/mcp-sidecar/internal/redact"
)

// process is one stdio server: the child, its pipes, and the goroutines
// that drain its stderr and reap it.
type process struct {
	name   string
	cmd    *exec.Cmd
	pid    int
	child  *reaper.Child  // nil without a reaper
	tree   *proctree.Tree // everything the server started
	stdin  *onceCloser
	stdout *lineReader
	stderr *ring

	stderrR    *os.File
	stderrDone chan struct{} // the stderr reader has stopped

	exited   chan struct{} // closed after cmd.Wait returned
	waitErr  error         // set before exited is closed
	exitedAt time.Time     // set before exited is closed

	stopOnce sync.Once
	stopped  chan struct{} // closed once stop has returned
}

// startProcess spawns the configured command in its own process group with
// the allowlisted environment. It owns the exec.Cmd rather than using
// go-sdk's CommandTransport, which signals only the direct child and ends
// the session on the first non-JSON line.
func startProcess(opts *Options) (*process, error) {
	cfg := opts.Config
	dir := cfg.Cwd
	if dir == "" {
		dir = opts.FallbackCwd
	}
	if dir != "" {
		fi, err := os.Stat(dir)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("server %q: cwd %q does not exist", opts.Name, dir)
		}
		if err != nil {
			return nil, fmt.Errorf("server %q: cwd %q: %w", opts.Name, dir, describePathErr(err))
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("server %q: cwd %q is not a directory", opts.Name, dir)
		}
	}
	lookup := opts.Env
	if lookup == nil {
		lookup = os.LookupEnv
	}
	env := config.ChildEnv(cfg, lookup)
	path, err := resolveCommand(cfg.Command, env, dir)
	if err != nil {
		return nil, fmt.Errorf("server %q: %w", opts.Name, err)
	}

	cmd := &exec.Cmd{
		Path: path,
		Args: append([]string{cfg.Command}, cfg.Args...),
		Dir:  dir,
		Env:  env,
		// The pipes are *os.File, so there are no copying goroutines; the
		// delay only bounds Wait should that ever change.
		WaitDelay: time.Second,
	}
	tr := proctree.NewTree()
	tr.Prepare(cmd)

	var files []*os.File // every pipe end, closed on failure
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	inR, inW, err := pipe()
	if err != nil {
		return nil, fmt.Errorf("server %q: %w", opts.Name, err)
	}
	outR, outW, err := pipe()
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("server %q: %w", opts.Name, err)
	}
	errR, errW, err := pipe()
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("server %q: %w", opts.Name, err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	child, err := opts.Reaper.Start(cmd)
	if err != nil {
		closeAll()
		tr.Release()
		return nil, fmt.Errorf("server %q: starting %q: %w", opts.Name, cfg.Command, err)
	}
	// The child has its copies; ours of its ends would hide EOF.
	inR.Close()
	outW.Close()
	errW.Close()
	if err := tr.Attach(cmd.Process.Pid); err != nil {
		opts.Logger.Warn("the server's processes are not contained", "server", opts.Name, "err", err)
	}

	p := &process{
		name:  opts.Name,
		cmd:   cmd,
		pid:   cmd.Process.Pid,
		child: child,
		tree:  tr,
		// Whoever closes stdin first (go-sdk closing its connection, or
		// stop), the tree is learnt before: a server that exits on EOF
		// leaves its children to be re-parented, out of reach of the walk.
		stdin:      &onceCloser{f: inW, pipe: pipeio.Open(inW), beforeClose: tr.Update},
		stderr:     &ring{max: opts.StderrBytes},
		stderrR:    errR,
		stderrDone: make(chan struct{}),
		exited:     make(chan struct{}),
		stopped:    make(chan struct{}),
	}
	p.stdout = newLineReader(outR, opts)
	go p.readStderr(opts.Handlers.StderrLine, opts.Logger, opts.Secrets)
	go func() {
		err := cmd.Wait()
		child.Waited()
		p.waitErr = err
		p.exitedAt = time.Now()
		close(p.exited)
	}()
	return p, nil
}

// exitStatus describes how the process ended ("exit status 1",
// "signal: killed"); "" while it runs.
func (p *process) exitStatus() string {
	select {
	case <-p.exited:
	default:
		return ""
	}
	if st := p.cmd.ProcessState; st != nil {
		return st.String()
	}
	if p.waitErr != nil {
		return p.waitErr.Error()
	}
	return "exited"
}

// exitedBefore reports whether the process had exited (been reaped) before
// t.
func (p *process) exitedBefore(t time.Time) bool {
	select {
	case <-p.exited:
		return p.exitedAt.Before(t)
	default:
		return false
	}
}

// drainStderr waits, up to d, for the stderr reader to reach EOF so that a
// crash report carries the server's last words.
func (p *process) drainStderr(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.stderrDone:
	case <-t.C:
	}
}

// killWait bounds the wait for processes after SIGKILL (one in
// uninterruptible sleep cannot be waited for without end).
const killWait = 5 * time.Second

// stop ends everything the server started: EOF on stdin, then SIGTERM,
// then SIGKILL, each to its process group and to the processes that left
// the group but descend from it (tree); then the orphans it detached that
// the reaper adopted (SIGTERM, SIGKILL after termGrace). It returns once
// the server is reaped and nothing of its tree or its orphans runs (or,
// for a process that does not die of SIGKILL, after a bound). Several
// callers may call it; each returns once it is done.
func (p *process) stop(closeGrace, termGrace time.Duration) {
	p.stopOnce.Do(func() {
		defer close(p.stopped)
		// Closing stdin learns the tree first; if go-sdk closed it
		// already, learn what the server started since.
		if !p.stdin.closeNow() {
			p.tree.Update()
		}
		if !p.waitGone(closeGrace) {
			p.tree.Signal(proctree.Terminate)
			if !p.waitGone(termGrace) {
				p.tree.Signal(proctree.Kill)
				waitClosed(p.exited, killWait)
				p.tree.Wait(killWait, proctree.Kill)
			}
		}
		// What the server detached with no parent chain left to it (a
		// double fork) was adopted by the reaper, which tells it by the
		// server's marker: it ends with the connection, not only with the
		// sidecar (docs/reliability.md).
		p.child.EndOrphans(termGrace)
		p.child.Ended()
		p.tree.Release()
		p.drainStderr(100 * time.Millisecond)
		p.stdout.Close()
		p.stderrR.Close()
		<-p.stderrDone
	})
	<-p.stopped
}

// waitGone waits up to d for the server to exit and then for the rest of
// its tree, and reports whether all of it is gone.
func (p *process) waitGone(d time.Duration) bool {
	deadline := time.Now().Add(d)
	if !waitClosed(p.exited, d) {
		return false
	}
	return p.tree.Wait(time.Until(deadline), 0)
}

func waitClosed(ch <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}

// readStderr keeps the tail of the server's stderr and passes each line on,
// with the server's secrets replaced (Options.Secrets). Lines longer than
// the reader's buffer are cut into pieces rather than buffered; the
// scrubbing holds back each piece's end that may begin a secret, so that
// a secret across two pieces is replaced too.
func (p *process) readStderr(onLine func(string), logger *slog.Logger, secrets *redact.Secrets) {
	defer close(p.stderrDone)
	r := bufio.NewReaderSize(p.stderrR, stderrChunk)
	scrub := redact.NewStream(secrets)
	for {
		chunk, err := r.ReadSlice('\n')
		more := errors.Is(err, bufio.ErrBufferFull)
		// What was held back goes out at the end of the input too.
		if text := scrub.Next(string(chunk), more); text != "" || len(chunk) > 0 && !more {
			line := strings.TrimRight(text, "\r\n")
			p.stderr.add(line)
			logger.Debug("server stderr", "server", p.name, peerlog.String("line", line))
			if onLine != nil {
				onLine(line)
			}
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}

// onceCloser closes the server's stdin once, whoever asks first (go-sdk on
// session close, or stop), after running beforeClose.
type onceCloser struct {
	f *os.File
	// pipe writes f with raw system calls (internal/pipeio); nil where f
	// is written as it is.
	pipe        *pipeio.File
	raw         syscall.RawConn // f's, for writeNoWait without pipe; set on first use
	beforeClose func()
	once        sync.Once
	err         error
}

func (c *onceCloser) Write(b []byte) (int, error) {
	if c.pipe != nil {
		return c.pipe.Write(b)
	}
	return c.f.Write(b)
}
func (c *onceCloser) Close() error {
	c.closeNow()
	return c.err
}

// closeNow closes, unless it was closed already, and reports whether this
// call closed it.
func (c *onceCloser) closeNow() bool {
	now := false
	c.once.Do(func() {
		now = true
		if c.beforeClose != nil {
			c.beforeClose()
		}
		c.err = c.f.Close()
	})
	return now
}

// stderrChunk is the most of a stderr line passed on at once.
const stderrChunk = 16 << 10

// ring keeps the last max bytes of stderr, cut at line boundaries.
type ring struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (r *ring) add(line string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf = append(r.buf, line...)
	r.buf = append(r.buf, '\n')
	if len(r.buf) <= r.max {
		return
	}
	cut := len(r.buf) - r.max
	if i := bytes.IndexByte(r.buf[cut:], '\n'); i >= 0 && cut+i+1 < len(r.buf) {
		cut += i + 1
	}
	r.buf = append(r.buf[:0:0], r.buf[cut:]...)
}

func (r *ring) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.TrimRight(string(r.buf), "\n")
}

func describePathErr(err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return errors.New("does not exist")
	case errors.Is(err, fs.ErrPermission):
		return errors.New("permission denied")
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// connectStdio spawns the server and runs the handshake, a probe and a
// second process included (handshake.go).
func (c *Conn) connectStdio(ctx context.Context) error {
	if err := c.spawn(); err != nil {
		return err
	}
	if err := c.handshake(ctx); err != nil {
		return c.startupFailed(ctx, err)
	}
	return nil
}

// spawn starts the server process and its read loop. Each process has its
// own readEnded and writeFailed (a probe may start a second one).
func (c *Conn) spawn() error {
	p, err := startProcess(&c.opts)
	if err != nil {
		return err
	}
	ended, failed := make(chan struct{}), make(chan struct{})
	var once sync.Once
	lc := &lineConn{lines: p.stdout, w: p.stdin, writeFailed: func(err error) {
		// The first failed write to the server's stdin: the monitor ends
		// the connection.
		once.Do(func() {
			c.writeErr = err
			close(failed)
		})
	}}
	c.proc, c.lc, c.readEnded, c.writeFailed = p, lc, ended, failed
	c.w.use(lc)
	go func() {
		c.w.readLines(lc)
		close(ended)
	}()
	return nil
}

// processGone reports whether the stdio server exited or closed its
// output.
func (c *Conn) processGone() bool {
	select {
	case <-c.proc.exited:
		return true
	case <-c.readEnded:
		return true
	default:
		return false
	}
}

// respawn replaces the server process with a new one: the first exited,
// or is in no state to be talked to, after the request died of (the
// probe, or a legacy-hinted initialize), and the next goes to the new one.
func (c *Conn) respawn(died, next string) error {
	old, oldLC, oldEnded := c.proc, c.lc, c.readEnded
	oldLC.Close()
	old.stop(0, c.opts.TermGrace)
	<-oldEnded
	c.opts.Logger.Info("server exited on "+died+": started again for "+next, "server", c.name)
	return c.spawn()
}
