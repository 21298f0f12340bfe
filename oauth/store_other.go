//go:build !unix

package oauth

import (
	"errors"
	"io/fs"
)

// checkOwner accepts every path: outside Unix, the file's ACL (inherited
// from the user's profile directory) is what keeps it private, and the
// mode bits Go reports say nothing about it.
func checkOwner(string, fs.FileInfo) error { return nil }

func chmodUnsupported(err error) bool { return errors.Is(err, errors.ErrUnsupported) }
