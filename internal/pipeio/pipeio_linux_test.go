package pipeio

import (
	"bytes"
	"errors"
	"io"
	"os"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// blockingPipe is a pipe with both ends in blocking mode, which os.NewFile
// leaves out of the poller.
func blockingPipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	r, w = os.NewFile(uintptr(p[0]), "r"), os.NewFile(uintptr(p[1]), "w")
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

// Only non-blocking files are read with raw system calls: a raw read of a
// blocking one would hold its thread without the runtime knowing.
func TestOpen(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	br, bw := blockingPipe(t)
	for _, tc := range []struct {
		name string
		f    *os.File
		raw  bool
	}{
		{"os.Pipe read end", pr, true},
		{"os.Pipe write end", pw, true},
		{"blocking read end", br, false},
		{"blocking write end", bw, false},
		{"nil", nil, false},
	} {
		if got := Open(tc.f) != nil; got != tc.raw {
			t.Errorf("%s: Open gave a File: %v, want %v", tc.name, got, tc.raw)
		}
	}
	if _, ok := Reader(br).(*os.File); !ok {
		t.Errorf("Reader of a blocking pipe is %T, want the *os.File", Reader(br))
	}
	if _, ok := Writer(pw).(*File); !ok {
		t.Errorf("Writer of os.Pipe's write end is %T, want a *File", Writer(pw))
	}
}

// Bytes written through a File arrive whole, also when the pipe fills and
// the write waits for the reader; a read waits for data and ends with
// io.EOF once the writer is closed.
func TestReadWrite(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	pr, pw := Open(r), Open(w)
	want := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB: past the pipe's 64 KiB
	errc := make(chan error, 1)
	go func() {
		n, err := pw.Write(want)
		if err == nil && n != len(want) {
			err = io.ErrShortWrite
		}
		errc <- errors.Join(err, w.Close())
	}()
	got, err := io.ReadAll(pr)
	if err != nil {
		t.Fatalf("ReadAll: %v", err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("Write: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("read %d bytes, want the %d written", len(got), len(want))
	}
}

// WriteNoWait writes what the pipe takes and returns at once when it is
// full.
func TestWriteNoWait(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	pw := Open(w)
	b := make([]byte, 4<<20) // more than any pipe takes
	n := pw.WriteNoWait(b)
	if n <= 0 || n >= len(b) {
		t.Fatalf("WriteNoWait wrote %d of %d bytes: want part of them", n, len(b))
	}
	if m := pw.WriteNoWait(b); m != 0 {
		t.Errorf("WriteNoWait to a full pipe wrote %d bytes", m)
	}
}

// Errors are os.File's: a closed file's read and write, a write with no
// reader left.
func TestErrors(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := Open(r), Open(w)
	r.Close()
	if _, err := pw.Write([]byte("x")); !errors.Is(err, syscall.EPIPE) {
		t.Errorf("Write with no reader: %v, want EPIPE", err)
	}
	w.Close()
	_, rerr := pr.Read(make([]byte, 1))
	_, werr := pw.Write([]byte("x"))
	if diff := cmp.Diff([]bool{true, true}, []bool{errors.Is(rerr, os.ErrClosed), errors.Is(werr, os.ErrClosed)}); diff != "" {
		t.Errorf("read and write of closed files (%v, %v): os.ErrClosed (-want +got):\n%s", rerr, werr, diff)
	}
}

// A read waiting in the poller ends when the file is closed.
func TestCloseEndsRead(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	pr := Open(r)
	errc := make(chan error, 1)
	go func() {
		_, err := pr.Read(make([]byte, 1))
		errc <- err
	}()
	r.Close()
	if err := <-errc; !errors.Is(err, os.ErrClosed) {
		t.Errorf("read of a file closed meanwhile: %v, want os.ErrClosed", err)
	}
}
