//go:build unix

package oauth

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestStoreRefusesWhatIsNotItsFile: whatever sits at credentials.json that
// is not this user's private regular file is refused (ErrUnsafe) without
// blocking: by Load (servers/status reads the store through it), by
// Update (servers/logout, a token saved) and so by a Manager shutting
// down. A FIFO there used to hang every one of them; a link to a token
// file elsewhere was followed.
func TestStoreRefusesWhatIsNotItsFile(t *testing.T) {
	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, file, elsewhere string)
		why   string
	}{
		{"FIFO", func(t *testing.T, file, _ string) {
			if err := syscall.Mkfifo(file, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "not a regular file (a FIFO)"},
		{"link to a credentials file", func(t *testing.T, file, elsewhere string) {
			if err := os.Symlink(elsewhere, file); err != nil {
				t.Fatal(err)
			}
		}, "not a regular file (a symbolic link, not followed)"},
		{"folder", func(t *testing.T, file, _ string) {
			if err := os.Mkdir(file, 0o700); err != nil {
				t.Fatal(err)
			}
		}, "not a regular file (a directory)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			// A valid store elsewhere, to link to.
			other := &Store{Dir: filepath.Join(base, "other")}
			if err := other.Update(func(e map[string]*Credentials) error {
				e["k"] = &Credentials{Server: "s", AccessToken: "theirs"}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			st := &Store{Dir: filepath.Join(base, "credentials")}
			if err := os.Mkdir(st.Dir, 0o700); err != nil {
				t.Fatal(err)
			}
			tc.plant(t, st.path(), other.path())

			for _, op := range []struct {
				name string
				run  func() error
			}{
				{"Load", func() error { _, _, err := st.Load(); return err }},
				{"Update", func() error {
					return st.Update(func(map[string]*Credentials) error { return nil })
				}},
				// What servers/status and servers/logout ask.
				{"Manager.Status", func() error {
					m := NewManager(Options{Store: st})
					defer m.Close()
					_, err := m.Status(Server{Name: "s", URL: "https://mcp.example/mcp"})
					return err
				}},
				{"Manager.Logout", func() error {
					m := NewManager(Options{Store: st})
					defer m.Close()
					_, err := m.Logout(Server{Name: "s", URL: "https://mcp.example/mcp"})
					return err
				}},
			} {
				done := make(chan error, 1)
				go func() { done <- op.run() }()
				select {
				case err := <-done:
					if !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), tc.why) {
						t.Errorf("%s = %v, want ErrUnsafe saying %q", op.name, err, tc.why)
					}
				case <-time.After(30 * time.Second):
					t.Fatalf("%s blocked on what is at %s", op.name, st.path())
				}
			}
		})
	}
}

// TestStoreRefusesWhatIsNotItsLockFile: the lock file is opened as the
// credentials file is read (internal/safefile): a FIFO at credentials.lock
// is refused without blocking (opening it for writing would wait for a
// reader), a link is not followed (it would create or lock a file
// elsewhere), and one others may read or write is refused, saying how to
// fix it. Nothing is written while it is refused.
func TestStoreRefusesWhatIsNotItsLockFile(t *testing.T) {
	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, lock, elsewhere string)
		why   string
	}{
		{"FIFO", func(t *testing.T, lock, _ string) {
			if err := syscall.Mkfifo(lock, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "not a regular file (a FIFO)"},
		{"link", func(t *testing.T, lock, elsewhere string) {
			if err := os.Symlink(elsewhere, lock); err != nil {
				t.Fatal(err)
			}
		}, "not a regular file (a symbolic link, not followed)"},
		{"dangling link", func(t *testing.T, lock, elsewhere string) {
			if err := os.Symlink(filepath.Join(filepath.Dir(elsewhere), "missing"), lock); err != nil {
				t.Fatal(err)
			}
		}, "not a regular file (a symbolic link, not followed)"},
		{"readable by others", func(t *testing.T, lock, _ string) {
			if err := os.WriteFile(lock, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(lock, 0o644); err != nil {
				t.Fatal(err)
			}
		}, "chmod 600"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			elsewhere := filepath.Join(base, "elsewhere")
			if err := os.WriteFile(elsewhere, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			st := &Store{Dir: filepath.Join(base, "credentials")}
			if err := os.Mkdir(st.Dir, 0o700); err != nil {
				t.Fatal(err)
			}
			tc.plant(t, filepath.Join(st.Dir, storeLock), elsewhere)

			done := make(chan error, 1)
			go func() {
				done <- st.Update(func(e map[string]*Credentials) error {
					e["k"] = &Credentials{Server: "s", AccessToken: "mine"}
					return nil
				})
			}()
			select {
			case err := <-done:
				if !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), tc.why) || !strings.Contains(err.Error(), storeLock) {
					t.Errorf("Update = %v, want ErrUnsafe naming %s and saying %q", err, storeLock, tc.why)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("Update blocked on what is at %s", storeLock)
			}
			if _, err := os.Lstat(st.path()); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s written under a refused lock file (%v)", storeFile, err)
			}
		})
	}
}
