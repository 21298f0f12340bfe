//go:build unix

package mcpclient

import "syscall"

// writeNoWait writes what of b the server's input takes at once and
// returns how much that was, without waiting for room: the pipe is in
// non-blocking mode (os.Pipe registers it with the runtime's poller), so a
// full pipe answers EAGAIN at once. Errors are left to the blocking write
// that sends the rest, which reports them.
func (c *onceCloser) writeNoWait(b []byte) int {
	if c.pipe != nil {
		return c.pipe.WriteNoWait(b)
	}
	if c.raw == nil { // one writer at a time (lineConn.writing) gets here
		rc, err := c.f.SyscallConn()
		if err != nil {
			return 0
		}
		c.raw = rc
	}
	rc := c.raw
	n := 0
	_ = rc.Write(func(fd uintptr) bool {
		for n < len(b) {
			m, err := syscall.Write(int(fd), b[n:])
			if err == syscall.EINTR {
				continue
			}
			if err != nil || m <= 0 {
				break
			}
			n += m
		}
		return true // never wait for room
	})
	return n
}
