//go:build !unix

package config

import "os"

// openNoBlock opens path for reading; outside Unix no file blocks its
// opener.
func openNoBlock(path string) (*os.File, error) { return os.Open(path) }
