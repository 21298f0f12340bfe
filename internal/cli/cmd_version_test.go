package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestBinaryVersionIsOneString: the binary go build makes, go run, and the
// binary scripts/release.sh puts in its archive for the same commit print
// the same version, the VERSION file's; the release names its archive and
// writes its VERSION (what npm-pack.mjs names the npm packages after) with
// it; and a $VERSION that differs from the file is refused. Before, go
// build printed a pseudo-version or 0.1.0-dev, go run 0.1.0-dev, and the
// release what git describe said.
func TestBinaryVersionIsOneString(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a release")
	}
	for _, tool := range []string{"bash", "tar", "gzip", "sha256sum"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("scripts/release.sh needs %s", tool)
		}
	}
	file, err := os.ReadFile(filepath.Join(moduleRoot, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.TrimSpace(string(file))
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "VERSION=") })

	out := t.TempDir()
	target := runtime.GOOS + "/" + runtime.GOARCH
	cmd := exec.Command("bash", "scripts/release.sh", "-o", out, target)
	cmd.Dir = moduleRoot
	cmd.Env = env
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("release.sh: %v\n%s", err, b)
	}
	exe := "mcp-sidecar"
	if runtime.GOOS == "windows" {
		exe += ".exe"
	}
	released := filepath.Join(out, "bin", runtime.GOOS+"-"+runtime.GOARCH, exe)

	goRun := exec.Command("go", "run", moduleRoot, "version")
	for name, cmd := range map[string]*exec.Cmd{
		"go build": exec.Command(binary(t), "version"),
		"go run":   goRun,
		"release":  exec.Command(released, "version"),
	} {
		b, err := cmd.Output()
		if got := string(b); err != nil || got != "mcp-sidecar "+want+"\n" {
			t.Errorf("%s prints %q (%v), want %q", name, got, err, "mcp-sidecar "+want+"\n")
		}
	}
	if b, err := os.ReadFile(filepath.Join(out, "VERSION")); err != nil || strings.TrimSpace(string(b)) != want {
		t.Errorf("the release's VERSION: %q (%v), want %q", b, err, want)
	}
	archive := filepath.Join(out, "mcp-sidecar_"+want+"_"+runtime.GOOS+"_"+runtime.GOARCH+".tar.gz")
	if runtime.GOOS == "windows" {
		archive = strings.TrimSuffix(archive, ".tar.gz") + ".zip"
	}
	if _, err := os.Stat(archive); err != nil {
		t.Errorf("the release's archive: %v", err)
	}

	cmd = exec.Command("bash", "scripts/release.sh", "-o", t.TempDir(), target)
	cmd.Dir = moduleRoot
	cmd.Env = append(env, "VERSION=9.9.9")
	if b, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(b), "edit VERSION") {
		t.Errorf("release.sh with a $VERSION other than the file's: %v\n%s", err, b)
	}
}
