package sidecar

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/internal/pipeio"
)

// blockingPipe is a pipe as a host gives it to the sidecar: both ends in
// blocking mode, so that os.NewFile leaves them out of the poller.
func blockingPipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	r, w = os.NewFile(uintptr(p[0]), "stdin"), os.NewFile(uintptr(p[1]), "stdout")
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

// The host's pipes are reopened to be waited for in the poller (a
// deadline can be set only on such a file), carry the same bytes, and the
// reader's Close closes the original input too.
func TestHostStdioPollable(t *testing.T) {
	in, hostW := blockingPipe(t)
	hostR, out := blockingPipe(t)
	if err := in.SetReadDeadline(time.Now()); !errors.Is(err, os.ErrNoDeadline) {
		t.Fatalf("a blocking pipe took a deadline (%v): the test cannot tell", err)
	}

	r, w, done := hostStdio(in, out)
	defer done()
	rf, ok := r.(interface{ SetReadDeadline(time.Time) error })
	if !ok {
		t.Fatalf("reader %T was not reopened", r)
	}
	if err := rf.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatalf("reopened input is not in the poller: %v", err)
	}
	// Read and written with raw system calls (internal/pipeio).
	if raw, ok := r.(*reopened).raw.(*pipeio.File); !ok || raw.OSFile() != r.(*reopened).File {
		t.Errorf("reopened input is read through %T, want a *pipeio.File of it", r.(*reopened).raw)
	}
	wp, ok := w.(*pipeio.File)
	if !ok || wp.OSFile() == out {
		t.Fatalf("writer %T was not reopened and written through pipeio", w)
	}
	wf := wp.OSFile()
	if err := wf.SetWriteDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatalf("reopened output is not in the poller: %v", err)
	}

	if _, err := hostW.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(r, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("read %q, %v; want ping", buf, err)
	}
	if _, err := w.Write([]byte("pong")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(hostR, buf); err != nil || string(buf) != "pong" {
		t.Fatalf("host read %q, %v; want pong", buf, err)
	}

	if err := r.(io.Closer).Close(); err != nil {
		t.Fatal(err)
	}
	// The original input is closed too: the host's writes fail once no
	// reader is left.
	if _, err := hostW.Write([]byte("x")); !errors.Is(err, syscall.EPIPE) {
		t.Errorf("host write after Close: %v, want EPIPE", err)
	}
}

// What is not a pipe (a file, a terminal, a socket) is used as it is.
func TestHostStdioNotAPipe(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, w, done := hostStdio(f, f)
	defer done()
	if r != io.Reader(f) || w != io.Writer(f) {
		t.Errorf("a regular file was reopened: %T, %T", r, w)
	}
}
