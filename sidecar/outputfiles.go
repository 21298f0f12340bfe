package sidecar

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/safefile"
)

// maxOutputFilesBytes bounds the files one session keeps of results cut to
// their limit. The temp folder is often memory (tmpfs): past the bound the
// oldest files go first, as a long conversation needs its latest results
// most.
const maxOutputFilesBytes = 256 << 20

// outputFiles are the files of one session that hold its cut results
// whole: in a folder of its own (0700, made at the first), each file 0600,
// written through safefile; the folder and all in it are removed when the
// session closes. The zero value is ready to use.
type outputFiles struct {
	// maxBytes bounds the bytes kept (0: maxOutputFilesBytes).
	maxBytes int64

	mu     sync.Mutex
	dir    string // "" until the first file
	closed bool
	seq    int
	kept   []keptFile // oldest first
	bytes  int64
}

type keptFile struct {
	path string
	size int64
}

// errSessionClosing: a result that ends as its session closes is not kept
// (its folder is gone, or going).
var errSessionClosing = errors.New("the session is closing")

// write keeps data in a new file with extension ext, in a folder made in
// root on first use, and returns its path. The writes of one session are
// one at a time: they are rare (a result over its limit), and close
// must not remove the folder under one.
func (o *outputFiles) write(root, ext string, data []byte) (string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return "", errSessionClosing
	}
	size, limit := int64(len(data)), o.maxBytes
	if limit <= 0 {
		limit = maxOutputFilesBytes
	}
	if size > limit {
		return "", fmt.Errorf("the result (%d bytes) is larger than the %d bytes kept per session", size, limit)
	}
	if o.dir == "" {
		// MkdirTemp makes a new folder, 0700, under a name no other
		// process chose: nothing can be waiting in it.
		dir, err := os.MkdirTemp(root, "mcp-sidecar-results-")
		if err != nil {
			return "", fmt.Errorf("cannot make a folder for tool results: %w", err)
		}
		if _, err := safefile.CheckDir(dir, safefile.Policy{Owner: safefile.OwnerSelf, Deny: 0o077}); err != nil {
			os.RemoveAll(dir)
			return "", fmt.Errorf("folder for tool results: %w", err)
		}
		o.dir = dir
	}
	for len(o.kept) > 0 && o.bytes+size > limit {
		os.Remove(o.kept[0].path)
		o.bytes -= o.kept[0].size
		o.kept = o.kept[1:]
	}
	o.seq++
	path := filepath.Join(o.dir, fmt.Sprintf("result-%d.%s", o.seq, ext))
	if err := safefile.WriteFile(path, data, 0o600); err != nil {
		return "", fmt.Errorf("cannot keep the result: %w", err)
	}
	o.kept = append(o.kept, keptFile{path, size})
	o.bytes += size
	return path, nil
}

// close removes the session's files and their folder; no file is written
// after it.
func (o *outputFiles) close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closed = true
	if o.dir == "" {
		return nil
	}
	dir := o.dir
	o.dir, o.kept, o.bytes = "", nil, 0
	return os.RemoveAll(dir)
}

// outputRoot is the folder the sessions' result folders are made in: the
// environment's TMPDIR when it is an absolute path, else the system's
// temp folder.
func outputRoot(env config.Lookup) string {
	if env != nil {
		if dir, ok := env("TMPDIR"); ok && filepath.IsAbs(dir) {
			return dir
		}
	}
	return os.TempDir()
}
