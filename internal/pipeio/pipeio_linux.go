package pipeio

import (
	"io"
	"os"
	"sync"
	"syscall"
	"unsafe"
)

// File is a non-blocking file read and written with raw system calls. It
// does not own the file: closing it is the caller's (a read or write
// waiting in the poller then ends with os.File's error).
type File struct {
	f  *os.File
	rc syscall.RawConn

	// One read and one write at a time, as the callbacks given to rc
	// share these fields; a File is made once, so are the callbacks.
	rmu      sync.Mutex
	rbuf     []byte
	rn       int
	rerr     syscall.Errno
	readFunc func(fd uintptr) bool

	wmu       sync.Mutex
	wbuf      []byte
	wn        int
	werr      syscall.Errno
	wait      bool // for writeFunc: wait for room (Write), or not (WriteNoWait)
	writeFunc func(fd uintptr) bool
}

// Open returns f to be read and written with raw system calls, or nil
// when f is not in non-blocking mode (a read of it could block the
// thread, which the runtime must then know of) or has no raw connection.
func Open(f *os.File) *File {
	if f == nil {
		return nil
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	nonblocking := false
	if err := rc.Control(func(fd uintptr) {
		flags, _, e := syscall.RawSyscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
		nonblocking = e == 0 && flags&syscall.O_NONBLOCK != 0
	}); err != nil || !nonblocking {
		return nil
	}
	p := &File{f: f, rc: rc}
	p.readFunc = p.read
	p.writeFunc = p.write
	return p
}

// OSFile is the file p reads and writes.
func (p *File) OSFile() *os.File { return p.f }

// Read reads as os.File.Read does: io.EOF at the end, os.File's errors.
func (p *File) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	p.rmu.Lock()
	p.rbuf, p.rn, p.rerr = b, 0, 0
	err := p.rc.Read(p.readFunc)
	n, errno := p.rn, p.rerr
	p.rbuf = nil
	p.rmu.Unlock()
	switch {
	case err != nil:
		// Closed, or not pollable after all: os.File says which, in its
		// own words.
		return p.f.Read(b)
	case errno != 0:
		return 0, &os.PathError{Op: "read", Path: p.f.Name(), Err: errno}
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// read is the read(2) rc.Read makes: false (wait for the poller) on
// EAGAIN.
func (p *File) read(fd uintptr) bool {
	for {
		n, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p.rbuf[0])), uintptr(len(p.rbuf)))
		switch e {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		case 0:
			p.rn = int(n)
		default:
			p.rerr = e
		}
		return true
	}
}

// Write writes all of b, waiting in the poller while the pipe is full, as
// os.File.Write does.
func (p *File) Write(b []byte) (int, error) {
	n, errno, err := p.writeRaw(b, true)
	switch {
	case err != nil:
		m, err := p.f.Write(b[n:])
		return n + m, err
	case errno != 0:
		return n, &os.PathError{Op: "write", Path: p.f.Name(), Err: errno}
	}
	return n, nil
}

// WriteNoWait writes what of b the pipe takes at once and returns how much
// that was, without waiting for room. Errors are left to a Write of the
// rest, which reports them.
func (p *File) WriteNoWait(b []byte) int {
	n, _, _ := p.writeRaw(b, false)
	return n
}

func (p *File) writeRaw(b []byte, wait bool) (int, syscall.Errno, error) {
	if len(b) == 0 {
		return 0, 0, nil
	}
	p.wmu.Lock()
	p.wbuf, p.wn, p.werr, p.wait = b, 0, 0, wait
	err := p.rc.Write(p.writeFunc)
	n, errno := p.wn, p.werr
	p.wbuf = nil
	p.wmu.Unlock()
	return n, errno, err
}

// write is the write(2) rc.Write makes, until all is written or it fails:
// false (wait for the poller) on EAGAIN when waiting.
func (p *File) write(fd uintptr) bool {
	for p.wn < len(p.wbuf) {
		rest := p.wbuf[p.wn:]
		n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&rest[0])), uintptr(len(rest)))
		switch e {
		case 0:
			p.wn += int(n)
		case syscall.EINTR:
		case syscall.EAGAIN:
			return !p.wait
		default:
			p.werr = e
			return true
		}
	}
	return true
}
