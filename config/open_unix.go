//go:build unix

package config

import (
	"os"
	"syscall"
)

// openNoBlock opens path for reading without blocking: a FIFO put there
// after it was checked would otherwise wait for a writer.
func openNoBlock(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
