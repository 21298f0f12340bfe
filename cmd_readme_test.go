package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// peopleDoc is the page whose transcript TestPeopleTranscriptMatchesDocs
// checks, and peopleHeading the heading the transcript follows.
const (
	peopleDoc     = "docs/cli.md"
	peopleHeading = "## One project, every command"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite docs/cli.md's transcript of the commands for people from this run")

// peopleCommands are the commands of docs/cli.md's transcript, in its
// order.
var peopleCommands = [][]string{
	{"doctor"},
	{"list"},
	{"tools", "--server", "example"},
	{"call", "add", "a=2", "b=40"},
	{"call", "exmaple", "echo", "txt=hi"},
	{"call", "example", "echo", "txt=hi"},
	{"prompts", "get", "greet", "name=Ada", "--command", "mcp-sidecar example-server"},
	{"resources", "--command", "mcp-sidecar example-server"},
	{"doctr"},
}

// TestPeopleTranscriptMatchesDocs lays out the project docs/cli.md's "One
// project, every command" describes (in a temporary home shown as
// /home/alice), runs the real binary's commands there and compares what
// they print with the transcript the page shows, modulo timings and the
// port nothing listens on, so that the docs show what people see. Each
// command's stderr comes before its stdout, except doctor's (its live
// display, left out). After a change, -update-docs rewrites the transcript:
//
//	go test -run TestPeopleTranscriptMatchesDocs . -args -update-docs
func TestPeopleTranscriptMatchesDocs(t *testing.T) {
	isolate(t)
	bin := binary(t)
	home := t.TempDir()
	proj := filepath.Join(home, "work", "proj")
	for _, dir := range []string{filepath.Join(proj, ".git"), filepath.Join(proj, ".cursor"), filepath.Join(home, ".codex"), filepath.Join(home, ".cache", "mcp-sidecar")} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// The user's Codex config: the example server built into the binary,
	// with a typo in a key.
	writeFile(t, filepath.Join(home, ".codex", "config.toml"), `[mcp_servers.example]
command = "mcp-sidecar"
args = ["example-server", "--sandbox"]
comand_timeout = 5
`, 0o600)
	// The project's .mcp.json: a server nobody runs and one with a typo
	// in its type, both approved in Claude Code; the local scope has a
	// server that cannot start.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := ln.Addr().String()
	ln.Close()
	writeFile(t, filepath.Join(proj, ".mcp.json"), `{"mcpServers": {
  "docs": {"type": "http", "url": "http://`+refused+`/mcp?api_key=s3cr3t"},
  "search": {"type": "streamable_http", "url": "https://search.example.com/mcp"}
}}`, 0o600)
	writeFile(t, filepath.Join(home, ".claude.json"), `{"numStartups": 7, "projects": {"`+proj+`": {
  "hasTrustDialogAccepted": true, "enabledMcpjsonServers": ["docs", "search"],
  "mcpServers": {"tickets": {"type": "stdio", "command": "sh", "args": ["-c", "echo 'error: TICKETS_TOKEN is not set' >&2; exit 1"]}}
}}}`, 0o600)
	// A Cursor server in the project that nobody approved (Cursor records
	// no approval the sidecar can read).
	writeFile(t, filepath.Join(proj, ".cursor", "mcp.json"), `{"mcpServers": {"browser": {"command": "npx", "args": ["-y", "@playwright/mcp"]}}}`, 0o600)

	env := append(os.Environ(), "HOME="+home, "XDG_CACHE_HOME="+filepath.Join(home, ".cache"), "CODEX_HOME=",
		"PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	var got strings.Builder
	for i, args := range peopleCommands {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(bin, args...)
		cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = proj, env, &stdout, &stderr
		code := 0
		if err := cmd.Run(); err != nil {
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Fatal(err)
			}
			code = ee.ExitCode()
		}
		if i > 0 {
			got.WriteString("\n")
		}
		fmt.Fprintf(&got, "$ mcp-sidecar %s\n", shellLine(args))
		if args[0] != "doctor" {
			got.WriteString(stderr.String())
		}
		got.WriteString(stdout.String())
		fmt.Fprintf(&got, "[exit %d]\n", code)
	}
	transcript := strings.ReplaceAll(got.String(), home, "/home/alice")

	// The port is free for a moment only; the page shows the one that is
	// free on every machine.
	transcript = strings.ReplaceAll(transcript, refused, "127.0.0.1:9")

	doc, err := os.ReadFile(peopleDoc)
	if err != nil {
		t.Fatal(err)
	}
	start, end, ok := peopleTranscript(string(doc))
	if !ok {
		t.Fatalf(`%s has no transcript under %q (a console block starting with "$ mcp-sidecar doctor")`, peopleDoc, peopleHeading)
	}
	if *updateDocs {
		updated := string(doc[:start]) + transcript + string(doc[end:])
		if err := os.WriteFile(peopleDoc, []byte(updated), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if diff := cmp.Diff(normalizeTranscript(string(doc[start:end])), normalizeTranscript(transcript)); diff != "" {
		t.Errorf("%s's transcript differs from what the commands print (-%s +now; -update-docs rewrites it):\n%s", peopleDoc, peopleDoc, diff)
	}
}

// shellLine writes args as a person types them.
func shellLine(args []string) string {
	var words []string
	for _, a := range args {
		if strings.ContainsAny(a, " \"'$") {
			a = `"` + a + `"`
		}
		words = append(words, a)
	}
	return strings.Join(words, " ")
}

// peopleTranscript finds the extent of the first console block after
// peopleHeading.
func peopleTranscript(readme string) (start, end int, ok bool) {
	const fence = "```console\n"
	h := strings.Index(readme, "\n"+peopleHeading+"\n")
	if h < 0 {
		return 0, 0, false
	}
	i := strings.Index(readme[h:], fence)
	if i < 0 {
		return 0, 0, false
	}
	start = h + i + len(fence)
	j := strings.Index(readme[start:], "```")
	if j < 0 || !strings.HasPrefix(readme[start:], "$ mcp-sidecar doctor") {
		return 0, 0, false
	}
	return start, start + j, true
}

var (
	durationPattern = regexp.MustCompile(`\b\d+(\.\d+)?(ms|s|m|h|d)\b`)
	refusedPort     = regexp.MustCompile(`127\.0\.0\.1:\d+`)
	blanks          = regexp.MustCompile(` +`)
)

// normalizeTranscript replaces what differs between runs: timings (and so
// the width of a table column) and the refused port.
func normalizeTranscript(s string) string {
	s = durationPattern.ReplaceAllString(s, "T")
	s = refusedPort.ReplaceAllString(s, "127.0.0.1:PORT")
	return blanks.ReplaceAllString(s, " ")
}
