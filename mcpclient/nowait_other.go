//go:build !unix

package mcpclient

// writeNoWait writes nothing where the pipe cannot be written without
// blocking: the blocking write, on a goroutine, sends it all.
func (c *onceCloser) writeNoWait(b []byte) int { return 0 }
