package schema

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
)

// exchange is one ```jsonrpc block of docs/protocol.md.
type exchange struct {
	line int // of the opening fence
	msgs []docMessage
}

type docMessage struct {
	line int
	dir  Direction
	body string
}

// parseExchanges reads the ```jsonrpc blocks of a Markdown file. In a
// block, a line starting with "-->" (host to sidecar) or "<--" (sidecar to
// host) starts a message; the lines after it, up to the next arrow,
// continue it.
func parseExchanges(t *testing.T, path string) []exchange {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []exchange
	var cur *exchange
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && strings.TrimSpace(line) == "```jsonrpc":
			cur = &exchange{line: n}
		case cur == nil:
		case strings.TrimSpace(line) == "```":
			out = append(out, *cur)
			cur = nil
		case strings.HasPrefix(line, "-->"):
			cur.msgs = append(cur.msgs, docMessage{line: n, dir: HostToSidecar, body: line[3:]})
		case strings.HasPrefix(line, "<--"):
			cur.msgs = append(cur.msgs, docMessage{line: n, dir: SidecarToHost, body: line[3:]})
		case len(cur.msgs) == 0:
			t.Fatalf("%s:%d: a jsonrpc block starts with a line that is no message: %q", path, n, line)
		default:
			cur.msgs[len(cur.msgs)-1].body += "\n" + line
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cur != nil {
		t.Fatalf("%s:%d: jsonrpc block not closed", path, cur.line)
	}
	return out
}

// TestDocExamplesValidate: every example exchange of docs/protocol.md is
// valid JSON-RPC that matches the schema, and every method of the schema
// has an example.
func TestDocExamplesValidate(t *testing.T) {
	const path = "../docs/protocol.md"
	exchanges := parseExchanges(t, path)
	if len(exchanges) == 0 {
		t.Fatalf("%s has no ```jsonrpc examples", path)
	}
	shown := map[string]bool{}
	for _, ex := range exchanges {
		c, err := NewChecker()
		if err != nil {
			t.Fatal(err)
		}
		failed := false
		for _, m := range ex.msgs {
			if !json.Valid([]byte(m.body)) {
				t.Errorf("%s:%d: not valid JSON: %s", path, m.line, m.body)
				continue
			}
			if err := c.Check(m.dir, []byte(m.body)); err != nil {
				t.Errorf("%s:%d: %v", path, m.line, err)
				failed = true
			}
			var probe struct {
				Method string `json:"method"`
			}
			_ = json.Unmarshal([]byte(m.body), &probe)
			if probe.Method != "" {
				shown[fmt.Sprintf("%s %s", m.dir, probe.Method)] = true
			}
		}
		// A request without its answer is fine in an example; its params
		// are checked all the same.
		if err := c.Err(); err != nil && !failed {
			t.Errorf("%s:%d: block: %v", path, ex.line, err)
		}
	}

	m, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	for _, r := range m.Meta.Requests {
		if !shown[fmt.Sprintf("%s %s", HostToSidecar, r.Method)] {
			missing = append(missing, r.Method)
		}
	}
	for _, r := range m.Meta.HostRequests {
		if !shown[fmt.Sprintf("%s %s", SidecarToHost, r.Method)] {
			missing = append(missing, r.Method)
		}
	}
	for _, n := range m.Meta.Notifications {
		dir := SidecarToHost
		if n.MessageDirection == "hostToSidecar" {
			dir = HostToSidecar
		}
		if !shown[fmt.Sprintf("%s %s", dir, n.Method)] {
			missing = append(missing, n.Method)
		}
	}
	if len(missing) > 0 {
		t.Errorf("%s has no example exchange of: %s", path, strings.Join(missing, ", "))
	}
}
