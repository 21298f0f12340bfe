//go:build unix

package safefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// safety bounds a call that must not block; it fails a test only when the
// call hung, so a loaded machine does not make it flaky.
const safety = 30 * time.Second

const nobody = 65534

// within runs f in a goroutine and fails the test if it does not return:
// opening a FIFO for reading blocks until a writer comes.
func within[T any](t *testing.T, f func() T) T {
	t.Helper()
	ch := make(chan T, 1)
	go func() { ch <- f() }()
	select {
	case v := <-ch:
		return v
	case <-time.After(safety):
		t.Fatalf("did not return within %v: it blocked", safety)
		var zero T
		return zero
	}
}

func write(t *testing.T, path, content string, mode os.FileMode) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // past the umask
		t.Fatal(err)
	}
	return path
}

// TestReadFile: what is at the path is read only when it is a regular file
// the policy accepts; nothing blocks, and the refusal says why.
func TestReadFile(t *testing.T) {
	// A root-owned file that every user can read: accepted as root's,
	// refused as another user's when the test does not run as root.
	rootFile := "/etc/passwd"
	if fi, err := os.Stat(rootFile); err != nil || fi.Sys().(*syscall.Stat_t).Uid != 0 {
		rootFile = ""
	}
	type want struct {
		Content string
		Kind    string // the refusal's kind; "" when read
		Reason  string // part of the refusal's reason
	}
	kindName := func(err error) string {
		for _, k := range []error{ErrNotRegular, ErrNotDir, ErrOwner, ErrMode, ErrTooLarge} {
			if errors.Is(err, k) {
				return k.Error()
			}
		}
		if err != nil {
			return "system: " + err.Error()
		}
		return ""
	}
	tests := []struct {
		name string
		// make puts something at path, in the folder dir.
		make      func(t *testing.T, dir, path string)
		p         Policy
		needsRoot string
		skip      func() string
		want      want
	}{
		{name: "regular file", make: func(t *testing.T, dir, p string) { write(t, p, "ok", 0o600) },
			p: Policy{Owner: OwnerSelf, Deny: 0o077}, want: want{Content: "ok"}},
		{name: "FIFO", make: func(t *testing.T, dir, p string) {
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				t.Fatal(err)
			}
		}, want: want{Kind: "not a regular file", Reason: "(a FIFO)"}},
		{name: "link to a FIFO, followed", make: func(t *testing.T, dir, p string) {
			fifo := filepath.Join(dir, "fifo")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(fifo, p); err != nil {
				t.Fatal(err)
			}
		}, p: Policy{Follow: true}, want: want{Kind: "not a regular file", Reason: "(a FIFO)"}},
		{name: "directory", make: func(t *testing.T, dir, p string) {
			if err := os.Mkdir(p, 0o700); err != nil {
				t.Fatal(err)
			}
		}, want: want{Kind: "not a regular file", Reason: "(a directory)"}},
		{name: "device", make: func(t *testing.T, dir, p string) {
			if err := os.Symlink("/dev/zero", p); err != nil {
				t.Fatal(err)
			}
		}, p: Policy{Follow: true, MaxBytes: 10}, want: want{Kind: "not a regular file", Reason: "(a device)"}},
		{name: "link not followed", make: func(t *testing.T, dir, p string) {
			if err := os.Symlink(write(t, filepath.Join(dir, "target"), "secret", 0o600), p); err != nil {
				t.Fatal(err)
			}
		}, want: want{Kind: "not a regular file", Reason: "(a symbolic link, not followed)"}},
		{name: "link followed", make: func(t *testing.T, dir, p string) {
			if err := os.Symlink(write(t, filepath.Join(dir, "target"), "target", 0o600), p); err != nil {
				t.Fatal(err)
			}
		}, p: Policy{Follow: true, Owner: OwnerSelfOrRoot}, want: want{Content: "target"}},
		{name: "link loop", make: func(t *testing.T, dir, p string) {
			if err := os.Symlink(p, p); err != nil {
				t.Fatal(err)
			}
		}, p: Policy{Follow: true}, want: want{Kind: "system: stat PATH: too many levels of symbolic links"}},
		{name: "missing", make: func(t *testing.T, dir, p string) {},
			want: want{Kind: "system: lstat PATH: no such file or directory"}},
		{name: "writable by others", make: func(t *testing.T, dir, p string) { write(t, p, "x", 0o666) },
			p: Policy{Deny: 0o022}, want: want{Kind: "permissions too open", Reason: "writable by group or others (mode 0666)"}},
		{name: "readable by group", make: func(t *testing.T, dir, p string) { write(t, p, "x", 0o640) },
			p: Policy{Deny: 0o077}, want: want{Kind: "permissions too open", Reason: "mode 0640 lets group or others in (want 0600)"}},
		{name: "too large", make: func(t *testing.T, dir, p string) { write(t, p, "12345", 0o600) },
			p: Policy{MaxBytes: 4}, want: want{Kind: "too large", Reason: "larger than 4 bytes"}},
		{name: "at the bound", make: func(t *testing.T, dir, p string) { write(t, p, "1234", 0o600) },
			p: Policy{MaxBytes: 4}, want: want{Content: "1234"}},
		{name: "another user's file", needsRoot: "chown to another user needs root", make: func(t *testing.T, dir, p string) {
			write(t, p, "x", 0o644)
			if err := os.Chown(p, nobody, nobody); err != nil {
				t.Fatal(err)
			}
		}, p: Policy{Owner: OwnerSelfOrRoot}, want: want{Kind: "owned by another user", Reason: "owned by uid 65534, not by the current user (uid 0) or root"}},
		{name: "a link to another user's file", needsRoot: "chown to another user needs root", make: func(t *testing.T, dir, p string) {
			target := write(t, filepath.Join(dir, "target"), "x", 0o644)
			if err := os.Chown(target, nobody, nobody); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
		}, p: Policy{Follow: true, Owner: OwnerSelfOrRoot}, want: want{Kind: "owned by another user", Reason: "owned by uid 65534"}},
		{name: "root's file, self or root", make: func(t *testing.T, dir, p string) {
			if err := os.Symlink(rootFile, p); err != nil {
				t.Fatal(err)
			}
		}, skip: func() string {
			if rootFile == "" {
				return "no root-owned /etc/passwd on this system"
			}
			return ""
		}, p: Policy{Follow: true, Owner: OwnerSelfOrRoot, MaxBytes: 1}, want: want{Kind: "too large"}},
		{name: "root's file, self only", make: func(t *testing.T, dir, p string) {
			if err := os.Symlink(rootFile, p); err != nil {
				t.Fatal(err)
			}
		}, skip: func() string {
			if rootFile == "" || os.Geteuid() == 0 {
				return "needs a root-owned /etc/passwd and a test not running as root"
			}
			return ""
		}, p: Policy{Follow: true, Owner: OwnerSelf}, want: want{Kind: "owned by another user", Reason: "not by the current user"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.needsRoot != "" && os.Geteuid() != 0 {
				t.Skip(tt.needsRoot)
			}
			if tt.skip != nil {
				if why := tt.skip(); why != "" {
					t.Skip(why)
				}
			}
			dir := t.TempDir()
			p := filepath.Join(dir, "file")
			tt.make(t, dir, p)
			type res struct {
				data []byte
				err  error
			}
			r := within(t, func() res {
				data, _, err := ReadFile(p, tt.p)
				return res{data, err}
			})
			got := want{Content: string(r.data), Kind: strings.ReplaceAll(kindName(r.err), p, "PATH")}
			var se *Error
			if errors.As(r.err, &se) {
				if se.Path != p {
					t.Errorf("Error.Path = %q, want %q", se.Path, p)
				}
				if !strings.Contains(se.Reason, tt.want.Reason) {
					t.Errorf("reason %q should say %q", se.Reason, tt.want.Reason)
				}
				got.Reason = tt.want.Reason
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ReadFile (-want +got):\n%s", diff)
			}
		})
	}
}

// TestOpenReadNeverBlocks: the open itself does not wait for a writer,
// should a FIFO be put at the path after Open looked at it.
func TestOpenReadNeverBlocks(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, follow := range []bool{false, true} {
		f := within(t, func() *os.File {
			f, err := openRead(fifo, follow)
			if err != nil {
				t.Fatal(err)
			}
			return f
		})
		fi, err := f.Stat()
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := (Policy{}).Check(fifo, fi); !errors.Is(err, ErrNotRegular) {
			t.Errorf("Check of the FIFO opened = %v, want ErrNotRegular", err)
		}
	}
}

// TestCheckDir: a folder of the right owner without the denied bits.
func TestCheckDir(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "d")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := CheckDir(dir, Policy{Owner: OwnerSelf, Deny: 0o077}); err != nil {
		t.Errorf("CheckDir of a private folder = %v", err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := CheckDir(dir, Policy{Deny: 0o022}); !errors.Is(err, ErrMode) {
		t.Errorf("CheckDir of a 0777 folder = %v, want ErrMode", err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	if _, err := CheckDir(link, Policy{}); !errors.Is(err, ErrNotDir) {
		t.Errorf("CheckDir of a link, not followed = %v, want ErrNotDir", err)
	}
	if _, err := CheckDir(link, Policy{Follow: true}); err != nil {
		t.Errorf("CheckDir of a link, followed = %v", err)
	}
	if _, err := CheckDir(filepath.Join(base, "none"), Policy{}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("CheckDir of nothing = %v, want fs.ErrNotExist", err)
	}
}

// TestWriteFile: the file is replaced whole, with the mode asked, and no
// temp file stays behind, whether the rename succeeds or fails.
func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	write(t, p, "old", 0o644)
	if err := WriteFile(p, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(p); string(got) != "new" || fi.Mode().Perm() != 0o600 {
		t.Errorf("file %q mode %o, want \"new\" 0600", got, fi.Mode().Perm())
	}
	// A folder with something in it at the path: the rename fails.
	blocked := filepath.Join(dir, "blocked")
	if err := os.MkdirAll(filepath.Join(blocked, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(blocked, []byte("x"), 0o600); err == nil {
		t.Error("WriteFile over a non-empty folder succeeded")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if diff := cmp.Diff([]string{"blocked", "f"}, names); diff != "" {
		t.Errorf("folder after the writes (-want +got):\n%s", diff)
	}
}

// TestOpenLock: a lock file is created 0600 when missing and opened for
// writing when it is a regular file the policy accepts; a FIFO, a link
// (dangling too: following it would create a file elsewhere) or a file
// others may read is refused, without blocking.
func TestOpenLock(t *testing.T) {
	p := Policy{Owner: OwnerSelf, Deny: 0o077}
	dir := t.TempDir()
	for _, tc := range []struct {
		name  string
		plant func(path string)
		kind  error // nil: opened
	}{
		{"missing", func(string) {}, nil},
		{"private file", func(path string) { write(t, path, "", 0o600) }, nil},
		{"FIFO", func(path string) {
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
		}, ErrNotRegular},
		{"dangling link", func(path string) {
			if err := os.Symlink(filepath.Join(dir, "nowhere"), path); err != nil {
				t.Fatal(err)
			}
		}, ErrNotRegular},
		{"readable by others", func(path string) { write(t, path, "", 0o644) }, ErrMode},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".lock")
			tc.plant(path)
			type result struct {
				f   *os.File
				err error
			}
			r := within(t, func() result { f, err := OpenLock(path, p); return result{f, err} })
			if tc.kind != nil {
				if !errors.Is(r.err, tc.kind) {
					t.Errorf("OpenLock = %v, want %v", r.err, tc.kind)
				}
				if _, err := os.Lstat(filepath.Join(dir, "nowhere")); !errors.Is(err, fs.ErrNotExist) {
					t.Error("a link was followed: its target exists")
				}
				return
			}
			if r.err != nil {
				t.Fatalf("OpenLock = %v", r.err)
			}
			defer r.f.Close()
			fi, err := r.f.Stat()
			if err != nil {
				t.Fatal(err)
			}
			if got := fi.Mode().Perm(); got&0o077 != 0 {
				t.Errorf("lock file mode %04o, want 0600", got)
			}
		})
	}
}
