package oauth

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const (
	storeChildEnv     = "MCP_SIDECAR_TEST_STORE_CHILD"
	storeChildNameEnv = "MCP_SIDECAR_TEST_STORE_CHILD_NAME"
	childUpdates      = 40
)

// storeChild adds childUpdates entries named after it to the store in dir,
// one Update each, and returns its exit status.
func storeChild(dir, name string) int {
	st := &Store{Dir: dir}
	for i := range childUpdates {
		id := name + "-" + strconv.Itoa(i)
		if err := st.Update(func(entries map[string]*Credentials) error {
			entries[id] = &Credentials{Server: id}
			return nil
		}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
}

// Processes updating one store at once (a sidecar per harness, a login)
// each read, change and write the whole file: without the lock file
// between them, one's write would drop what another wrote meanwhile.
func TestStoreUpdatesOfProcessesAreNotLost(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "credentials")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var children []*exec.Cmd
	var want []string
	for c := range 4 {
		name := "p" + strconv.Itoa(c)
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), storeChildEnv+"="+dir, storeChildNameEnv+"="+name)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		children = append(children, cmd)
		for i := range childUpdates {
			want = append(want, name+"-"+strconv.Itoa(i))
		}
	}
	for _, cmd := range children {
		if err := cmd.Wait(); err != nil {
			t.Errorf("store updater: %v", err)
		}
	}
	entries, _, err := (&Store{Dir: dir}).Load()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for id := range entries {
		got = append(got, id)
	}
	slices.Sort(got)
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("entries in the store (-want +got):\n%s", diff)
	}
}
