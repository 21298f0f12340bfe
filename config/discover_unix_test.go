//go:build unix

package config

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDiscoverReportsWhatIsNotAFile: a FIFO, a directory, a symbolic link
// loop, a link to nothing or to a device where a config file belongs are
// found, and each is a problem of that file (as when the host names it),
// read without blocking and without reading the device; the good files
// around them still load. Before, discovery skipped them silently.
func TestDiscoverReportsWhatIsNotAFile(t *testing.T) {
	home, root := t.TempDir(), t.TempDir()
	cwd := filepath.Join(root, "a")
	for _, dir := range []string{filepath.Join(root, ".git"), filepath.Join(cwd, ".cursor"), filepath.Join(cwd, ".vscode", "mcp.json"), filepath.Join(cwd, ".codex"), filepath.Join(home, ".cursor")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	fifo := filepath.Join(root, ".mcp.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	loop := filepath.Join(cwd, ".cursor", "mcp.json")
	dangling := filepath.Join(cwd, ".codex", "config.toml")
	device := filepath.Join(home, ".cursor", "mcp.json")
	for link, target := range map[string]string{loop: "mcp.json", dangling: "missing.toml", device: "/dev/zero"} {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	good := writeFile(t, cwd, ".mcp.json", `{"mcpServers": {"good": {"command": "echo"}}}`)
	// A path through a file is nothing there: .cursor is a file here.
	writeFile(t, root, ".cursor", "")

	found, _ := Discover(DiscoverOptions{Home: home, Cwd: cwd, TrustProject: true})
	var paths []string
	for _, s := range found {
		paths = append(paths, s.Path)
	}
	dir := filepath.Join(cwd, ".vscode", "mcp.json")
	want := []string{device, fifo, dangling, good, loop, dir}
	if diff := cmp.Diff(want, paths); diff != "" {
		t.Fatalf("found (-want +got):\n%s", diff)
	}

	l := Load(found, nil, MapLookup(nil))
	if diff := cmp.Diff([]string{"good"}, l.Names()); diff != "" {
		t.Errorf("servers (-want +got):\n%s", diff)
	}
	var problems []string
	for _, s := range l.Sources {
		if s.Err != nil {
			problems = append(problems, s.Err.Error())
		}
	}
	wantProblems := []string{
		device + ": not a regular file (a device)",
		fifo + ": not a regular file (a FIFO)",
		dangling + ": cannot be read: no such file or directory",
		loop + ": cannot be read: too many levels of symbolic links",
		dir + ": not a regular file (a directory)",
	}
	if diff := cmp.Diff(wantProblems, problems); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	if len(l.Errors) != len(wantProblems) {
		t.Errorf("errors: %v", l.Errors)
	}
}

// TestOpenNoBlock: what readBounded opens after its Stat never blocks,
// should a FIFO have been put there in between: opening a FIFO for
// reading otherwise waits for a writer.
func TestOpenNoBlock(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := openNoBlock(fifo)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if got := notRegular(fi); got != "not a regular file (a FIFO)" {
		t.Errorf("got %q", got)
	}
}
