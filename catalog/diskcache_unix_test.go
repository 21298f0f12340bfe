//go:build unix

package catalog

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Cache files and folders the sidecar did not make for itself (issue 13,
// items 10 and 11): whatever sits at an entry's path, Load neither blocks
// nor trusts anything but a regular file of bounded size; a folder or file
// another user owns, or others may write, is refused, never used as is.

// loadWithin runs Load in a goroutine and fails the test if it does not
// return: a FIFO opened for reading blocks until a writer comes.
func loadWithin(t *testing.T, c *DiskCache) (*CacheEntry, error) {
	t.Helper()
	type res struct {
		e   *CacheEntry
		err error
	}
	ch := make(chan res, 1)
	go func() {
		e, err := c.Load(testKey)
		ch <- res{e, err}
	}()
	select {
	case r := <-ch:
		return r.e, r.err
	case <-time.After(safety):
		t.Fatalf("Load did not return within %v: it blocked", safety)
		return nil, nil
	}
}

const nobody = 65534

func TestDiskCacheRefusesWhatItDidNotMake(t *testing.T) {
	entry := &CacheEntry{Server: "srv", Tools: raws(`{"name":"a","inputSchema":{}}`)}
	tests := []struct {
		name string
		// plant puts something at the entry's path p in the cache folder
		// dir; other is a valid entry of the same key in another folder.
		plant    func(t *testing.T, dir, p, other string)
		root     bool // needs root (chown)
		wantErr  error
		wantWhy  string
		storeErr bool // Store is refused too (the folder is untrusted)
	}{
		{name: "fifo", plant: func(t *testing.T, dir, p, other string) {
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				t.Fatal(err)
			}
		}, wantErr: ErrCorrupt, wantWhy: "not a regular file"},
		{name: "symlink to a valid entry", plant: func(t *testing.T, dir, p, other string) {
			if err := os.Symlink(other, p); err != nil {
				t.Fatal(err)
			}
		}, wantErr: ErrCorrupt, wantWhy: "not a regular file"},
		{name: "directory", plant: func(t *testing.T, dir, p, other string) {
			if err := os.Mkdir(p, 0o700); err != nil {
				t.Fatal(err)
			}
		}, wantErr: ErrCorrupt, wantWhy: "not a regular file"},
		{name: "file writable by others", plant: func(t *testing.T, dir, p, other string) {
			copyFile(t, other, p, 0o666)
		}, wantErr: ErrUntrusted, wantWhy: "writable by group or others"},
		{name: "file of another user", root: true, plant: func(t *testing.T, dir, p, other string) {
			copyFile(t, other, p, 0o600)
			if err := os.Chown(p, nobody, nobody); err != nil {
				t.Fatal(err)
			}
		}, wantErr: ErrUntrusted, wantWhy: "owned by uid 65534"},
		{name: "folder writable by others", plant: func(t *testing.T, dir, p, other string) {
			copyFile(t, other, p, 0o600)
			if err := os.Chmod(dir, 0o777); err != nil {
				t.Fatal(err)
			}
		}, wantErr: ErrUntrusted, wantWhy: "writable by group or others", storeErr: true},
		{name: "folder of another user", root: true, plant: func(t *testing.T, dir, p, other string) {
			copyFile(t, other, p, 0o600)
			if err := os.Chown(dir, nobody, nobody); err != nil {
				t.Fatal(err)
			}
		}, wantErr: ErrUntrusted, wantWhy: "owned by uid 65534", storeErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.root && os.Geteuid() != 0 {
				t.Skip("making a file of another user needs root")
			}
			base := t.TempDir()
			dir := filepath.Join(base, "cache")
			c := &DiskCache{Dir: dir}
			// A valid entry of the key elsewhere, to plant copies or links
			// of: only what is planted, not its content, is wrong.
			elsewhere := &DiskCache{Dir: filepath.Join(base, "elsewhere")}
			if err := elsewhere.Store(testKey, entry); err != nil {
				t.Fatal(err)
			}
			other, _ := elsewhere.path(testKey)
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			p, _ := c.path(testKey)
			tt.plant(t, dir, p, other)
			modeBefore := statMode(t, dir)

			e, err := loadWithin(t, c)
			if !errors.Is(err, tt.wantErr) || e != nil {
				t.Fatalf("Load = %v, %v; want an error matching %v", e, err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantWhy) {
				t.Errorf("Load error %q should say %q", err, tt.wantWhy)
			}
			err = c.Store(testKey, entry)
			if tt.storeErr {
				if !errors.Is(err, ErrUntrusted) {
					t.Errorf("Store into an untrusted folder = %v, want ErrUntrusted", err)
				}
				if got := statMode(t, dir); got != modeBefore {
					t.Errorf("the folder's mode changed from %o to %o: refuse it, do not repair it", modeBefore, got)
				}
				return
			}
			// A trusted folder: Store replaces what was planted.
			if err != nil {
				t.Fatalf("Store over the planted %s: %v", tt.name, err)
			}
			if e, err := c.Load(testKey); err != nil || e == nil {
				t.Errorf("after Store: %v, %v", e, err)
			}
		})
	}
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(to, mode); err != nil { // past the umask
		t.Fatal(err)
	}
}

func statMode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode()
}
