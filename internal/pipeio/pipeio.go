// Package pipeio reads and writes the pipes of the call path (the host's
// stdin and stdout, a stdio server's stdin and stdout) with plain
// read(2) and write(2) where the pipe is in non-blocking mode, waiting
// for it in the runtime's network poller as os.File does.
//
// os.File enters each read and write through the runtime's system call
// bookkeeping (entersyscall), which, when every processor was idle, wakes
// the runtime's monitor thread (sysmon) with a futex: on the call path
// that is the first read after each wait, about two a tools/call, and in
// a profile of the sidecar at one call in flight the largest cost of its
// own above the system calls themselves (bench/README.md, "The call
// path"). A read or write of a non-blocking pipe never blocks, so it
// needs none of that bookkeeping: it is made as a raw system call, and
// EAGAIN waits in the poller (syscall.RawConn).
package pipeio

import (
	"io"
	"os"
)

// Reader returns a reader of f that reads with raw read(2) when f is a
// non-blocking file the poller waits for (os.Pipe's ends, a pipe opened
// with O_NONBLOCK), else f itself. Its errors are os.File's.
func Reader(f *os.File) io.Reader {
	if p := Open(f); p != nil {
		return p
	}
	return f
}

// Writer is Reader for writing: a writer of f with raw write(2) that
// writes all of b (waiting in the poller while the pipe is full), or f
// itself.
func Writer(f *os.File) io.Writer {
	if p := Open(f); p != nil {
		return p
	}
	return f
}
