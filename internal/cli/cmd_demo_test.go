package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDemoMatchesREADME runs the real binary's demo and compares what it
// prints with the transcript the README shows under "The two commands", so
// that the README quotes what a newcomer sees. Process ids differ from run
// to run and are compared as "pid N". The demo holds round 0's notifications
// until it has printed session/open's answer, the order they have on the
// wire; before it did, they raced the answer's line and the transcript
// changed from run to run.
func TestDemoMatchesREADME(t *testing.T) {
	isolate(t)
	readme, err := os.ReadFile(filepath.Join(moduleRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	want, ok := demoTranscript(string(readme))
	if !ok {
		t.Fatal("README.md has no demo transcript (a ``` block starting with \"mcp-sidecar demo:\")")
	}
	for range 3 { // the order used to vary between runs
		out, err := exec.Command(binary(t), "demo").Output()
		if err != nil {
			t.Fatalf("mcp-sidecar demo: %v\n%s", err, out)
		}
		if diff := cmp.Diff(normalizeDemo(want), normalizeDemo(string(out))); diff != "" {
			t.Fatalf("README's demo transcript differs from what `mcp-sidecar demo` prints (-README +demo):\n%s", diff)
		}
	}
}

// demoTranscript finds the fenced block whose first line starts with
// "mcp-sidecar demo:".
func demoTranscript(readme string) (string, bool) {
	const fence = "```\nmcp-sidecar demo:"
	i := strings.Index(readme, fence)
	if i < 0 {
		return "", false
	}
	body := readme[i+len("```\n"):]
	j := strings.Index(body, "```")
	if j < 0 {
		return "", false
	}
	return body[:j], true
}

var (
	pidPattern     = regexp.MustCompile(`pid \d+|\[\d+\]`)
	versionPattern = regexp.MustCompile(`sidecar mcp-sidecar [^;\s]+;`)
)

// normalizeDemo replaces what differs between builds of one source: process
// ids, and the version, which is "0.1.0-dev" under `go run` (as the README
// shows it) but a pseudo-version naming the commit for a binary `go build`
// made in a clone.
func normalizeDemo(s string) string {
	s = versionPattern.ReplaceAllString(s, "sidecar mcp-sidecar VERSION;")
	return normalizePids(s)
}

func normalizePids(s string) string {
	return pidPattern.ReplaceAllStringFunc(s, func(m string) string {
		if strings.HasPrefix(m, "[") {
			return "[N]"
		}
		return "pid N"
	})
}
