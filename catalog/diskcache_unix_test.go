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

// Cache files and folders the sidecar did not make for itself: whatever sits
// at an entry's path, Load neither blocks nor trusts anything but a regular
// file of bounded size; a folder or file another user owns, or others may
// write, is refused, never used as is.

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
	const (
		noFileWithoutRoot = "chown to another user needs root, and without it no other user's " +
			"regular file can be put in the cache folder (fs.protected_hardlinks refuses a hard " +
			"link to one, and a symbolic link is refused as not a regular file)"
		noFolderWithoutRoot = "chown to another user needs root; " +
			"\"link to a folder of another user\" checks a folder's owner without it"
	)
	entry := &CacheEntry{Server: "srv", Tools: raws(`{"name":"a","inputSchema":{}}`)}
	tests := []struct {
		name string
		// plant puts something at the entry's path p in the cache folder
		// dir; other is a valid entry of the same key in another folder.
		plant func(t *testing.T, dir, p, other string)
		// needsRoot, when set, is why the case needs root (chown) and
		// what covers it without root; it is skipped otherwise.
		needsRoot string
		wantErr   error
		wantWhy   string
		storeErr  bool // Store is refused too (the folder is untrusted)
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
		{name: "file of another user", needsRoot: noFileWithoutRoot, plant: func(t *testing.T, dir, p, other string) {
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
		{name: "folder of another user", needsRoot: noFolderWithoutRoot, plant: func(t *testing.T, dir, p, other string) {
			copyFile(t, other, p, 0o600)
			if err := os.Chown(dir, nobody, nobody); err != nil {
				t.Fatal(err)
			}
		}, wantErr: ErrUntrusted, wantWhy: "owned by uid 65534", storeErr: true},
		// The folder a link names is what is checked (CheckDir); this is
		// also how the owner check runs without root.
		{name: "link to a folder of another user", plant: func(t *testing.T, dir, p, other string) {
			target := otherUsersFolder(t)
			if err := os.Remove(dir); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, dir); err != nil {
				t.Fatal(err)
			}
		}, wantErr: ErrUntrusted, wantWhy: "not by the current user", storeErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.needsRoot != "" && os.Geteuid() != 0 {
				t.Skip(tt.needsRoot)
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

// otherUsersFolder is a folder the current user does not own: as root, one
// made for the test and given to nobody; otherwise the file system's root,
// which root owns.
func otherUsersFolder(t *testing.T) string {
	t.Helper()
	uid := os.Geteuid()
	if uid == 0 {
		d := filepath.Join(t.TempDir(), "others")
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, nobody, nobody); err != nil {
			t.Fatal(err)
		}
		return d
	}
	fi, err := os.Stat("/")
	if err != nil {
		t.Fatal(err)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) == uid {
		t.Skipf("/ is owned by the current user (uid %d): no folder of another user to link to", uid)
	}
	return "/"
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
