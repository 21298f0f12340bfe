// Package safefile is the one way the sidecar opens, reads and writes
// files that decide what it runs or that hold what it must keep: config
// files and the tools' trust records, the catalog cache, OAuth
// credentials.
//
// Reading never blocks and never reads something other than a regular
// file: what is at the path is looked at first (opening some devices has
// effects), opened without waiting for a writer (O_NONBLOCK, so a FIFO put
// there in between cannot hang the caller), and what was opened is looked
// at again (fstat) before a byte is read. A Policy adds what the caller
// asks: no symbolic link as the last component (O_NOFOLLOW), an owner (the
// effective user, or that user or root), permission bits that must not be
// set. Writing is atomic: a temp file in the same folder, written, synced
// and renamed over the old one, mode 0600 unless told otherwise.
//
// Outside Unix there are no owners or mode bits to check (the folder's
// ACL, inherited from the user's profile, is what protects a file there)
// and no FIFOs in the file system; a link is refused by looking before
// opening.
package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Owner says who must own a file.
type Owner int

const (
	// AnyOwner checks no owner.
	AnyOwner Owner = iota
	// OwnerSelf is the effective user only: files the sidecar writes for
	// itself (cache, credentials).
	OwnerSelf
	// OwnerSelfOrRoot is the effective user or root: files a person or
	// the system keeps (config files, a launcher and its folders).
	OwnerSelfOrRoot
)

// Policy is what a caller requires of a file besides being a regular file.
type Policy struct {
	// Follow follows a symbolic link at the last component of the path
	// (a user's config kept by a dotfile manager); the file it leads to is
	// what is checked. Without it a link is refused (O_NOFOLLOW).
	Follow bool
	// Owner is who must own the file (or folder).
	Owner Owner
	// Deny are permission bits that must not be set: 0o022 (group and
	// others may not write), 0o077 (private to its owner).
	Deny fs.FileMode
	// MaxBytes bounds what ReadFile reads; 0 is no bound.
	MaxBytes int64
}

// Kinds of refusal, matched with errors.Is on an *Error.
var (
	// ErrNotRegular: a directory, a FIFO, a socket, a device, or a
	// symbolic link the policy does not follow.
	ErrNotRegular = errors.New("not a regular file")
	// ErrNotDir: CheckDir found something other than a folder.
	ErrNotDir = errors.New("not a directory")
	// ErrOwner: owned by someone the policy does not accept.
	ErrOwner = errors.New("owned by another user")
	// ErrMode: permission bits the policy denies are set.
	ErrMode = errors.New("permissions too open")
	// ErrTooLarge: larger than the policy's MaxBytes.
	ErrTooLarge = errors.New("too large")
)

// Error is a refusal: what is at Path is not what the policy accepts.
type Error struct {
	Path string
	// Kind is one of ErrNotRegular, ErrNotDir, ErrOwner, ErrMode,
	// ErrTooLarge.
	Kind error
	// Reason says why for people, without the path (the caller may name
	// the file its own way): "not a regular file (a FIFO)".
	Reason string
}

func (e *Error) Error() string { return e.Path + ": " + e.Reason }

func (e *Error) Unwrap() error { return e.Kind }

// Open opens the regular file at path for reading as p says, without
// blocking, and returns it with what fstat says of it. An *Error says why
// what is there is refused; other errors are the system's (*fs.PathError:
// missing, no permission, a link loop).
func Open(path string, p Policy) (*os.File, fs.FileInfo, error) {
	// Look before opening: opening a device can have effects, and a FIFO
	// or a link is refused without touching it.
	fi, err := p.stat(path)
	if err != nil {
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, notRegular(path, fi)
	}
	f, err := openRead(path, p.Follow)
	if err != nil {
		// A link put there since the look fails O_NOFOLLOW (with ELOOP on
		// Linux, other errors elsewhere): say what it is.
		if !p.Follow {
			if li, lerr := os.Lstat(path); lerr == nil && li.Mode()&fs.ModeSymlink != 0 {
				return nil, nil, notRegular(path, li)
			}
		}
		return nil, nil, err
	}
	// What was opened may have been put there after the look.
	if fi, err = f.Stat(); err != nil {
		f.Close()
		return nil, nil, err
	}
	if err := p.Check(path, fi); err != nil {
		f.Close()
		return nil, nil, err
	}
	if p.MaxBytes > 0 && fi.Size() > p.MaxBytes {
		f.Close()
		return nil, nil, &Error{Path: path, Kind: ErrTooLarge, Reason: fmt.Sprintf("larger than %d bytes", p.MaxBytes)}
	}
	return f, fi, nil
}

// OpenLock opens the lock file at path for reading and writing, creating
// it (mode 0600) when missing, as p says: a regular file only, never a
// link unless p.Follow, opened without blocking (a FIFO put there would
// otherwise hang every updater until a reader came), its owner and mode
// checked on what was opened (fstat). Its content is never read: the
// caller locks it (flock(2), LockFileEx). Errors are as Open's.
func OpenLock(path string, p Policy) (*os.File, error) {
	// Look before opening, as Open does; a missing file is created.
	fi, err := p.stat(path)
	switch {
	case err == nil && !fi.Mode().IsRegular():
		return nil, notRegular(path, fi)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	f, err := openLock(path, p.Follow)
	if err != nil {
		if !p.Follow {
			if li, lerr := os.Lstat(path); lerr == nil && li.Mode()&fs.ModeSymlink != 0 {
				return nil, notRegular(path, li)
			}
		}
		return nil, err
	}
	if fi, err = f.Stat(); err != nil {
		f.Close()
		return nil, err
	}
	if err := p.Check(path, fi); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// ReadFile reads the regular file at path as Open does, at most
// p.MaxBytes of it (more is ErrTooLarge, even when the file grew after it
// was opened).
func ReadFile(path string, p Policy) ([]byte, fs.FileInfo, error) {
	f, fi, err := Open(path, p)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	limit := p.MaxBytes
	if limit <= 0 {
		limit = 1<<63 - 2
	}
	// As os.ReadFile: room for the size fstat gave, growing should the
	// file have grown, up to one byte past limit.
	data := make([]byte, 0, min(fi.Size(), limit, 1<<30)+512)
	for int64(len(data)) <= limit {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
		room := min(int64(cap(data)-len(data)), limit+1-int64(len(data)))
		n, err := f.Read(data[len(data) : len(data)+int(room)])
		data = data[:len(data)+n]
		if errors.Is(err, io.EOF) {
			return data, fi, nil
		}
		if err != nil {
			return nil, nil, err
		}
	}
	return nil, nil, &Error{Path: path, Kind: ErrTooLarge, Reason: fmt.Sprintf("larger than %d bytes", p.MaxBytes)}
}

// Check says whether fi, what is at path, is a regular file p accepts.
func (p Policy) Check(path string, fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return notRegular(path, fi)
	}
	return p.checkOwnerMode(path, fi)
}

// CheckDir says whether the folder at path is one p accepts: a folder
// (a link to one when p.Follow), of p.Owner, without p.Deny's bits. It
// returns what it found; a missing folder is an error matching
// fs.ErrNotExist.
func CheckDir(path string, p Policy) (fs.FileInfo, error) {
	fi, err := p.stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return fi, &Error{Path: path, Kind: ErrNotDir, Reason: "not a directory"}
	}
	return fi, p.checkOwnerMode(path, fi)
}

func (p Policy) checkOwnerMode(path string, fi fs.FileInfo) error {
	if why := OwnerProblem(fi, p.Owner); why != "" {
		return &Error{Path: path, Kind: ErrOwner, Reason: why}
	}
	if why := modeProblem(fi, p.Deny); why != "" {
		return &Error{Path: path, Kind: ErrMode, Reason: why}
	}
	return nil
}

func (p Policy) stat(path string) (fs.FileInfo, error) {
	if p.Follow {
		return os.Stat(path)
	}
	return os.Lstat(path)
}

// notRegular is the refusal of fi, which is not a regular file.
func notRegular(path string, fi fs.FileInfo) *Error {
	return &Error{Path: path, Kind: ErrNotRegular, Reason: NotRegularReason(fi)}
}

// NotRegularReason says what fi is instead of a regular file:
// "not a regular file (a FIFO)".
func NotRegularReason(fi fs.FileInfo) string {
	what := ""
	switch t := fi.Mode().Type(); {
	case t&fs.ModeSymlink != 0:
		what = " (a symbolic link, not followed)"
	case t&fs.ModeDir != 0:
		what = " (a directory)"
	case t&fs.ModeNamedPipe != 0:
		what = " (a FIFO)"
	case t&fs.ModeSocket != 0:
		what = " (a socket)"
	case t&fs.ModeDevice != 0:
		what = " (a device)"
	}
	return "not a regular file" + what
}

// modeProblem says which of the bits deny fi has, or "".
func modeProblem(fi fs.FileInfo, deny fs.FileMode) string {
	if !hasModeBits {
		return ""
	}
	perm := fi.Mode().Perm()
	if perm&deny == 0 {
		return ""
	}
	if deny&^0o022 == 0 {
		return fmt.Sprintf("writable by group or others (mode %04o)", perm)
	}
	return fmt.Sprintf("mode %04o lets group or others in (want %04o)", perm, perm&^deny)
}

// WriteFile replaces the file at path with data atomically: a temp file
// in the same folder, given perm, written, synced, renamed over path, and
// the folder synced, so a reader sees the old file or the new one, never a
// torn one, and a crash leaves no partial file at path. The temp file is
// removed on failure.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("cannot write in %s: %w", dir, err)
	}
	name := tmp.Name()
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(name)
		}
	}()
	// CreateTemp makes 0600 files; Chmod pins perm should that change.
	if err := tmp.Chmod(perm); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", name, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close %s: %w", name, err)
	}
	if err := os.Rename(name, path); err != nil {
		return err
	}
	done = true
	// Make the rename itself durable. Folders cannot be synced everywhere
	// (Windows); the file's content already is.
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
