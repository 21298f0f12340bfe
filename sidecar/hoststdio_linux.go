package sidecar

import (
	"errors"
	"io"
	"os"
	"strconv"
	"syscall"

	"github.com/mcp-sidecar/mcp-sidecar/internal/pipeio"
)

// pollable returns, for a pipe of the host's (the sidecar's stdin or
// stdout), a file of the same pipe opened anew without blocking, which the
// Go runtime then waits for in its network poller; anything else it
// returns as it is (ok false).
//
// A read loop blocked in read(2) on the host's stdin holds a thread in a
// system call between calls, which keeps the runtime's monitor thread
// waking every 20 µs to take the thread's processor back; waiting in the
// poller leaves the processors idle and lets it sleep, which costs a
// tools/call fewer context switches (bench/README.md, "The call path").
// The pipe is opened through /proc/self/fd, never set non-blocking in
// place: the open file description may be shared with the host or a shell,
// whose reads and writes must not change.
func pollable(f any, flag int) (*os.File, bool) {
	file, ok := f.(*os.File)
	if !ok || file == nil {
		return nil, false
	}
	sc, err := file.SyscallConn()
	if err != nil {
		return nil, false
	}
	var fd int
	var ferr error
	if err := sc.Control(func(orig uintptr) {
		var st syscall.Stat_t
		if ferr = syscall.Fstat(int(orig), &st); ferr != nil {
			return
		}
		if st.Mode&syscall.S_IFMT != syscall.S_IFIFO {
			ferr = errors.New("not a pipe")
			return
		}
		// Opening a pipe's write end without blocking fails (ENXIO) when
		// nobody reads it: the original then stays.
		fd, ferr = syscall.Open("/proc/self/fd/"+strconv.Itoa(int(orig)), flag|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	}); err != nil || ferr != nil {
		return nil, false
	}
	return os.NewFile(uintptr(fd), file.Name()), true
}

// hostStdio is r and w with their pipes reopened to be waited for in the
// poller (pollable), and read and written with raw system calls
// (internal/pipeio: no wake of the runtime's monitor thread per call). The
// reader's Close closes the original too, as closing the host's input did.
// done closes the reopened writer, once the connection wrote its last
// frame (the original is the caller's).
func hostStdio(r io.Reader, w io.Writer) (io.Reader, io.Writer, func()) {
	done := func() {}
	if p, ok := pollable(r, syscall.O_RDONLY); ok {
		r = &reopened{File: p, orig: r.(*os.File), raw: pipeio.Reader(p)}
	}
	if p, ok := pollable(w, syscall.O_WRONLY); ok {
		w, done = pipeio.Writer(p), func() { p.Close() }
	}
	return r, w, done
}

// reopened is the host's input opened anew, read through raw; Close
// closes both files.
type reopened struct {
	*os.File
	orig *os.File
	raw  io.Reader // File's pipeio.Reader
}

func (f *reopened) Read(b []byte) (int, error) { return f.raw.Read(b) }

func (f *reopened) Close() error {
	return errors.Join(f.File.Close(), f.orig.Close())
}
